"""torch.nn.functional's names over the C library's NN ops (one _C call each)."""
from .. import _C


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def linear(input, weight, bias=None):
    return _C.linear(input, weight, bias)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _C.conv2d(input, weight, bias, _pair(stride), _pair(padding), _pair(dilation), groups)


def max_pool2d(input, kernel_size, stride=None, padding=0):
    return _C.max_pool2d(input, _pair(kernel_size), _pair(kernel_size if stride is None else stride), _pair(padding))


def avg_pool2d(input, kernel_size, stride=None, padding=0):
    return _C.avg_pool2d(input, _pair(kernel_size), _pair(kernel_size if stride is None else stride), _pair(padding))


def adaptive_avg_pool2d(input, output_size):
    return _C.adaptive_avg_pool2d(input, _pair(output_size))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    return _C.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def dropout(input, p=0.5, training=True):
    return _C.dropout(input, p, training)


def softmax(input, dim):
    return input.softmax(dim)


def log_softmax(input, dim):
    return input.log_softmax(dim)


def _mean_only(reduction):
    if reduction != "mean":
        raise ValueError(f"reduction={reduction!r}: only 'mean' is supported by the library's losses")


def cross_entropy(input, target, label_smoothing=0.0, reduction="mean"):
    _mean_only(reduction)
    return _C.cross_entropy(input, target, label_smoothing)


def nll_loss(input, target, reduction="mean"):
    _mean_only(reduction)
    return _C.nll_loss(input, target)


def mse_loss(input, target, reduction="mean"):
    _mean_only(reduction)
    return _C.mse_loss(input, target)


def embedding(input, weight):
    return _C.embedding(weight, input)


def gather(input, dim, index):
    return _C.gather(input, dim, index)


def index_select(input, dim, index):
    return _C.index_select(input, dim, index)
