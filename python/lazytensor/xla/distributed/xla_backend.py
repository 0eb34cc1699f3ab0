"""torch_xla.distributed.xla_backend: importing it registers nothing.

PyTorch/XLA registers an 'xla' backend of torch.distributed for DDP; on
lazytensor, gradients are averaged by xm.optimizer_step inside the step's
graph, so DDP over 'xla' is not offered: init_process_group('xla') fails
in torch with its own error naming the backend."""
from .._names import missing as _missing

__getattr__ = _missing(__name__)
