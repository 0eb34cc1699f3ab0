"""Misuse never crashes the interpreter: each bad call raises TypeError,
ValueError, IndexError or RuntimeError (library errors carry the library's
message, which names the function), and the next call works."""
import numpy as np
import pytest

import lazytensor as lt


def fixtures():
    return dict(a=lt.ones(2, 3), v=lt.ones(3), leaf=lt.ones(3, requires_grad=True), i=lt.ones(3, dtype=lt.int64))


# (call, exception, text the message contains)
ROWS = [
    # wrong types and arity
    (lambda f: f["a"] + "x", TypeError, ""),
    (lambda f: f["a"].lerp_("x", 0.1), TypeError, "lerp_: argument 'end' must be a Tensor"),
    (lambda f: f["a"].lerp_(f["a"]), TypeError, "lerp_() takes 2 arguments"),
    (lambda f: f["a"].lerp_(f["a"], "w"), TypeError, "argument 'weight' must be a number"),
    (lambda f: f["a"].view("a", 2), TypeError, "view: argument 'size' must be an int"),
    (lambda f: f["a"].view(2.0, 3), TypeError, "must be an int"),
    (lambda f: f["a"].sum(dim="x"), TypeError, ""),
    (lambda f: f["a"].to("float32"), TypeError, "must be a lazytensor dtype"),
    (lambda f: f["a"].transpose(0), TypeError, "transpose() takes 2 arguments"),
    (lambda f: lt.zeros(2.5), TypeError, "size must be ints"),
    (lambda f: lt.Tensor(), TypeError, "cannot be constructed directly"),
    (lambda f: lt.nn.functional.conv2d(f["a"], "w"), TypeError, "conv2d: argument 'weight' must be a Tensor"),
    (lambda f: lt.cat([f["a"], 3]), TypeError, "cat: argument 'tensors' must be a Tensor"),
    (lambda f: f["a"].copy_(np.ones(3)), TypeError, "copy_: argument 'src' must be a Tensor"),
    (lambda f: f["i"].requires_grad_(), TypeError, "only floating tensors can require grad"),
    (lambda f: f["a"].__dlpack__(1, 2), TypeError, ""),
    (lambda f: lt.optim.SGD([1.0], lr=0.1), TypeError, "can only optimize Tensors"),
    # bad dims and values
    (lambda f: f["a"].sum(dim=5), ValueError, "lt_sum"),
    (lambda f: f["a"].transpose(0, 7), ValueError, "lt_transpose"),
    (lambda f: f["a"].softmax(-3), ValueError, "lt_softmax"),
    (lambda f: f["a"].unsqueeze(9), ValueError, "lt_unsqueeze"),
    (lambda f: f["a"].permute(0, 0), ValueError, "lt_permute"),
    (lambda f: f["a"].view(4, 2), RuntimeError, "lt_view"),
    (lambda f: f["a"].view(-1, -1), ValueError, "lt_view"),
    (lambda f: f["a"][::-1], ValueError, "step must be greater than zero"),
    (lambda f: lt.zeros(-1), ValueError, "lt_zeros"),
    (lambda f: lt.nn.Dropout(2.0), ValueError, "between 0 and 1"),
    (lambda f: lt.nn.functional.dropout(f["a"], 1.5), ValueError, "lt_dropout"),
    # huge shapes
    (lambda f: lt.zeros(1 << 40, 1 << 40, 1 << 10), ValueError, "lt_zeros"),
    (lambda f: lt.zeros(1 << 62), ValueError, "lt_zeros"),
    (lambda f: lt.ones(2).expand(1 << 62, 2), (ValueError, RuntimeError), "lt_expand"),
    (lambda f: lt.zeros(1 << 70), OverflowError, ""),
    (lambda f: lt.zeros(*([1] * 9)), ValueError, "at most 8"),
    # out-of-range indices
    (lambda f: f["a"][2], IndexError, "lt_select"),
    (lambda f: f["a"][-3], IndexError, "lt_select"),
    (lambda f: f["a"][0, 0, 0], IndexError, "too many indices"),
    (lambda f: f["a"][..., ...], IndexError, "single ellipsis"),
    (lambda f: f["a"]["x"], IndexError, "valid indices"),
    (lambda f: f["a"].select(1, 3), IndexError, "lt_select"),
    (lambda f: f["a"].narrow(1, 2, 5), IndexError, "lt_narrow"),
    (lambda f: f["a"].size(4), IndexError, "out of range"),
    (lambda f: f["a"][lt.tensor([0.5])], IndexError, "1-D int64"),
    (lambda f: f["a"].__setitem__(lt.tensor([0]), 1.0), IndexError, "not supported"),
    (lambda f: f["a"].__setitem__(0, "x"), TypeError, "can only assign"),
    # shapes, state
    (lambda f: f["a"] + lt.ones(4), RuntimeError, "lt_add"),
    (lambda f: f["a"] @ f["a"], RuntimeError, "lt_matmul"),
    (lambda f: f["a"].add_(lt.ones(2, 3, 4)), RuntimeError, "lt_add_"),
    (lambda f: f["a"].item(), RuntimeError, "lt_item"),
    (lambda f: bool(f["a"]), RuntimeError, "ambiguous"),
    (lambda f: len(lt.tensor(1.0)), TypeError, "0-d"),
    (lambda f: f["leaf"].add_(1), RuntimeError, "lt_add_scalar_"),
    (lambda f: f["leaf"][0].fill_(1), RuntimeError, "lt_fill_"),
    (lambda f: (f["leaf"] * 2).backward(), RuntimeError, "lt_backward"),
    (lambda f: f["v"].backward(), RuntimeError, "lt_backward"),
    (lambda f: f["i"].add_(0.5), TypeError, "lt_add_"),
    (lambda f: f["a"].expand(3, 3), RuntimeError, "lt_expand"),
    (lambda f: f["a"][0:1].expand(4, 3).mul_(2), ValueError, "expanded view"),
    (lambda f: setattr(f["a"], "grad", lt.ones(2, 3)), TypeError, "only be set to None"),
    # exchange and files
    (lambda f: lt.from_dlpack(np.ones((3, 4), np.float32).T), ValueError, "not C-contiguous"),
    (lambda f: lt.from_dlpack(np.ones(3, np.float16)), TypeError, "not supported"),
    (lambda f: lt.from_dlpack(object()), TypeError, "has no __dlpack__"),
    (lambda f: lt.tensor([[1, 2], [3]]), (TypeError, ValueError), ""),
    (lambda f: lt.tensor(np.ones(2, np.complex64)), TypeError, "not supported"),
    (lambda f: lt._C.from_buffer(b"abc", lt.float32, (1,)), ValueError, "3 bytes for 1 elements"),
    (lambda f: lt.load("/nonexistent/x.safetensors"), OSError, "lt_load_safetensors"),
    (lambda f: lt.data.FakeData(0), ValueError, "lt_dataset_fake: argument 'n'"),
    (lambda f: lt.data.FashionMNIST("/nonexistent"), OSError, "lt_dataset_fashion_mnist"),
    (lambda f: lt.data.DataLoader(lt.data.FakeData(10, image_size=4), batch_size=0), ValueError, "lt_loader_new"),
    (lambda f: lt.nn.Linear(3, 2)(f["a"].t()), RuntimeError, "lt_linear"),
    (lambda f: lt.nn.functional.cross_entropy(f["a"], lt.tensor([0.0, 1.0])), TypeError, "lt_cross_entropy"),
]


@pytest.mark.parametrize("row", range(len(ROWS)))
def test_bad_call_raises_and_library_stays_usable(row):
    call, exc, text = ROWS[row]
    with pytest.raises(exc) as info:
        call(fixtures())
    assert text in str(info.value)
    assert lt.is_grad_enabled()
    assert (lt.ones(2) + 1).tolist() == [2.0, 2.0]  # the next call works
    lt.mark_step()


def test_malformed_file(tmp_path):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    with pytest.raises(ValueError, match="lt_load_safetensors"):
        lt.load(p)
    assert lt.ones(1).item() == 1.0
