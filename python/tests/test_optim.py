"""lazytensor.optim against torch.optim: the same parameters and gradients
give the same updates; groups, schedulers, checkpoints; no recompiles."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import torch_or_skip

CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=1e-2, nesterov=True)),
    ("SGD", dict(lr=0.05)),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
]


def run_both(name, kw, steps=4, groups=False):
    torch = torch_or_skip()
    rng = np.random.default_rng(1)
    w0 = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
    tw = [torch.tensor(w, requires_grad=True) for w in w0]
    ow = [lt.tensor(w, requires_grad=True) for w in w0]
    if groups:
        topt = getattr(torch.optim, name)([{"params": [tw[0]]}, {"params": [tw[1]], "lr": kw["lr"] / 10}], **kw)
        oopt = getattr(lt.optim, name)([{"params": [ow[0]]}, {"params": [ow[1]], "lr": kw["lr"] / 10}], **kw)
    else:
        topt, oopt = getattr(torch.optim, name)(tw, **kw), getattr(lt.optim, name)(ow, **kw)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    for _ in range(steps):
        tl = ((torch.tensor(x) @ tw[0] + tw[1]) ** 2).mean()
        tl.backward()
        topt.step()
        topt.zero_grad()
        ol = ((lt.tensor(x) @ ow[0] + ow[1]) ** 2).mean()
        ol.backward()
        oopt.step()
        oopt.zero_grad()
        lt.mark_step()
        assert ol.item() == pytest.approx(tl.item(), rel=1e-5)
    for a, b in zip(ow, tw):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    return oopt, ow


@pytest.mark.parametrize("name,kw", CASES)
def test_optimizers_match_torch(name, kw):
    run_both(name, kw)


def test_param_groups_match_torch():
    oopt, _ = run_both("Adam", dict(lr=1e-2), groups=True)
    assert len(oopt.param_groups) == 2 and oopt.param_groups[1]["lr"] == 1e-3


def test_lr_changes_do_not_recompile():
    w = lt.ones(8, requires_grad=True)
    opt = lt.optim.AdamW([w], lr=0.1)
    sched = lt.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    lrs = []
    for step in range(6):
        (w * w).sum().backward()
        opt.step()
        opt.zero_grad()
        lt.mark_step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
        if step == 2:
            compiles = lt.metric("UncachedCompile")
    assert lt.metric("UncachedCompile") == compiles
    assert len(set(lrs)) == 6


def test_schedulers_match_torch():
    torch = torch_or_skip()
    for cls, kw in (("StepLR", dict(step_size=2, gamma=0.5)), ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01))):
        tp = torch.zeros(1, requires_grad=True)
        topt = torch.optim.SGD([tp], lr=0.1)
        ts = getattr(torch.optim.lr_scheduler, cls)(topt, **kw)
        oopt = lt.optim.SGD([lt.zeros(1, requires_grad=True)], lr=0.1)
        os_ = getattr(lt.optim.lr_scheduler, cls)(oopt, **kw)
        for _ in range(8):
            topt.step()
            ts.step()
            oopt.step()
            os_.step()
            assert os_.get_last_lr()[0] == pytest.approx(ts.get_last_lr()[0], rel=1e-12)


def test_optimizer_state_dict_round_trip():
    opt, ws = run_both("AdamW", dict(lr=1e-2), steps=2)
    sd = opt.state_dict()
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"] and sd["state"][0]["step"] == 2
    w2 = [lt.tensor(w.numpy(), requires_grad=True) for w in ws]
    opt2 = lt.optim.AdamW(w2, lr=1.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 1e-2
    for a, b in ((opt, ws), (opt2, w2)):
        (b[0].sum() + b[1].sum()).backward()
        a.step()
        a.zero_grad()
    lt.mark_step()
    for u, v in zip(ws, w2):
        np.testing.assert_array_equal(u.numpy(), v.numpy())


def test_bad_optimizer_arguments():
    with pytest.raises(ValueError):
        lt.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError):
        lt.optim.SGD([1.0], lr=0.1)
    with pytest.raises(ValueError):
        lt.optim.Adam([lt.zeros(1, requires_grad=True)], lr=-1.0)
