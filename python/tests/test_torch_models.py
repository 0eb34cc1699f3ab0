"""The model zoo on the PyTorch device (issue 27, check 1).

Each torchvision model runs 3 SGD steps (momentum, weight decay) from the
same state_dict on the same batch of 2 small images, on the lazytensor
device and on the CPU, then one eval-mode forward. Every loss, the eval
output and every parameter must agree within 1e-4 of that tensor's largest
magnitude, or within 2x the CPU's own float32-vs-float64 distance where
that is larger (both printed); and no op may fall back to the CPU.
Dropout / stochastic depth are set to p = 0 so neither side draws.
"""
import copy

import pytest

from conftest import torch_or_skip

torch = torch_or_skip()
torchvision = pytest.importorskip("torchvision")
ltt = pytest.importorskip("lazytensor.torch")
F = torch.nn.functional
M = torchvision.models

# name -> (constructor, image size)
ZOO = {
    "alexnet": (lambda: M.alexnet(num_classes=10), 64),
    "vgg11_bn": (lambda: M.vgg11_bn(num_classes=10), 32),
    "resnet18": (lambda: M.resnet18(num_classes=10), 32),
    "resnet50": (lambda: M.resnet50(num_classes=10), 32),
    "densenet121": (lambda: M.densenet121(num_classes=10), 32),
    "squeezenet1_1": (lambda: M.squeezenet1_1(num_classes=10), 48),
    "inception_v3": (lambda: M.inception_v3(num_classes=10, aux_logits=False, init_weights=True), 75),
    "mobilenet_v2": (lambda: M.mobilenet_v2(num_classes=10), 32),
    "mobilenet_v3_small": (lambda: M.mobilenet_v3_small(num_classes=10), 32),
    "efficientnet_b0": (lambda: M.efficientnet_b0(num_classes=10, stochastic_depth_prob=0.0), 32),
    "shufflenet_v2_x1_0": (lambda: M.shufflenet_v2_x1_0(num_classes=10), 32),
    "regnet_y_400mf": (lambda: M.regnet_y_400mf(num_classes=10), 32),
    "convnext_tiny": (lambda: M.convnext_tiny(num_classes=10, stochastic_depth_prob=0.0), 32),
    "vit_b_16": (lambda: M.vit_b_16(image_size=64, num_classes=10), 64),
}


def no_draws(model):
    for m in model.modules():
        if isinstance(m, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
            m.p = 0.0
    return model


def run(model, x, y, dev, dtype=torch.float32):
    """3 SGD steps then an eval forward; returns (losses, eval output, params) on the CPU."""
    model = model.to(device=dev, dtype=dtype)
    x, y = x.to(device=dev, dtype=dtype), y.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if dev != "cpu":
            ltt.mark_step()
        losses.append(loss.detach().cpu().double())
    model.eval()
    with torch.no_grad():
        out = model(x).cpu().double()
    params = {n: p.detach().cpu().double() for n, p in model.named_parameters()}
    return torch.stack(losses), out, params


def distance(a, b):
    return (a - b).abs().max().item() if a.numel() else 0.0


@pytest.mark.parametrize("name", sorted(ZOO))
def test_model(name):
    make, size = ZOO[name]
    torch.manual_seed(0)
    base = no_draws(make())
    state = copy.deepcopy(base.state_dict())
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, size, size, generator=g)
    y = torch.randint(0, 10, (2,), generator=g)

    ltt.metrics_reset()
    dev_model = no_draws(make())
    dev_model.load_state_dict(state)
    got = run(dev_model, x, y, ltt.device())
    fallbacks = ltt.fallback_counts()
    print(f"{name}: CPU fallbacks {fallbacks or 'none'}")

    cpu_model = no_draws(make())
    cpu_model.load_state_dict(state)
    want = run(cpu_model, x, y, "cpu")

    ref64 = None
    failures = []
    pairs = [("losses", got[0], want[0]), ("eval output", got[1], want[1])]
    pairs += [(n, got[2][n], want[2][n]) for n in want[2]]
    for what, a, b in pairs:
        err = distance(a, b)
        bound = 1e-4 * max(b.abs().max().item() if b.numel() else 0.0, 1e-30)
        if err <= bound:
            continue
        if ref64 is None:  # the CPU's own float32-vs-float64 distance, computed only when needed
            m64 = no_draws(make())
            m64.load_state_dict(state)
            ref64 = run(m64, x, y, "cpu", torch.float64)
        r = {"losses": ref64[0], "eval output": ref64[1]}.get(what)
        r = ref64[2][what] if r is None else r
        bound64 = 2 * distance(b, r)
        print(f"{name} {what}: device-vs-CPU {err:.3g}, 1e-4 bound {bound:.3g}, 2x CPU f32-vs-f64 {bound64:.3g}")
        if err > bound64:
            failures.append(f"{what}: {err:.3g} > max({bound:.3g}, {bound64:.3g})")
    assert not failures, f"{name}: " + "; ".join(failures[:8])
    assert not fallbacks, f"{name} ran ops on the CPU: {fallbacks}"
