"""The model zoo on the PyTorch device (issue 27, check 1).

Each torchvision model runs 3 SGD steps (momentum, weight decay) from the
same state_dict on the same batch of 2 small images, on the lazytensor
device and on the CPU, then one eval-mode forward. Every loss, the eval
output and every parameter must agree within 1e-4 of that tensor's largest
magnitude, or within 2x the CPU's own float32-vs-float64 distance for that
model (its worst tensor, relative to the magnitude likewise) where that is
larger (both printed); and no op may fall back to the CPU.
A batch on which a ReLU of a (batch, features) input sees a value within
1e-6 of that input's scale of zero (on the CPU, float32) is drawn again:
there float32 rounding, not the device, decides the unit's gradient.
Dropout / stochastic depth are set to p = 0 so neither side draws. Images
are 64x64 (75x75 for inception_v3): at 32x32 the last stages of most of
these models are 1x1, batch norm sees 2 values per channel, and the CPU's
own float32 and float64 runs disagree in the first digit.
"""
import copy

import pytest

from conftest import torch_device_or_skip

torch = torch_device_or_skip(heavy=True)
torchvision = pytest.importorskip("torchvision")
ltt = pytest.importorskip("lazytensor.torch")
F = torch.nn.functional
M = torchvision.models

# name -> (constructor, image size)
ZOO = {
    "alexnet": (lambda: M.alexnet(num_classes=10), 64),
    "vgg11_bn": (lambda: M.vgg11_bn(num_classes=10), 64),
    "resnet18": (lambda: M.resnet18(num_classes=10), 64),
    "resnet50": (lambda: M.resnet50(num_classes=10), 64),
    "densenet121": (lambda: M.densenet121(num_classes=10), 64),
    "squeezenet1_1": (lambda: M.squeezenet1_1(num_classes=10), 64),
    "inception_v3": (lambda: M.inception_v3(num_classes=10, aux_logits=False, init_weights=True), 75),
    "mobilenet_v2": (lambda: M.mobilenet_v2(num_classes=10), 64),
    "mobilenet_v3_small": (lambda: M.mobilenet_v3_small(num_classes=10), 64),
    "efficientnet_b0": (lambda: M.efficientnet_b0(num_classes=10, stochastic_depth_prob=0.0), 64),
    "shufflenet_v2_x1_0": (lambda: M.shufflenet_v2_x1_0(num_classes=10), 64),
    "regnet_y_400mf": (lambda: M.regnet_y_400mf(num_classes=10), 64),
    "convnext_tiny": (lambda: M.convnext_tiny(num_classes=10, stochastic_depth_prob=0.0), 64),
    "vit_b_16": (lambda: M.vit_b_16(image_size=64, num_classes=10), 64),
}


NULL = 1e-6


def no_draws(model):
    for m in model.modules():
        if isinstance(m, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
            m.p = 0.0
    return model


def relu_margin(model):
    """Hooks the ReLUs of model that see (batch, features) inputs; returns a
    list that collects, per call, the smallest nonzero |input| relative to
    that input's largest magnitude. There, a ReLU that float32 rounding
    flips moves one unit's gradient by a whole sample's share (over a
    batch of 2); in a conv's (N, C, H, W) the flip is one position of many
    in every sum it enters."""
    seen = []

    def pre(_, inputs):
        v = inputs[0].detach().abs()
        if v.ndim != 2:
            return
        top = v.max().item()
        nonzero = v[v > 0]
        if top > 0 and nonzero.numel():
            seen.append(nonzero.min().item() / top)

    for m in model.modules():
        if isinstance(m, torch.nn.ReLU):
            m.register_forward_pre_hook(pre)
    return seen


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
    # A batch on which float32 rounding decides a ReLU is no test of the
    # device: alexnet's first batch (seed 1) gave one of its second step's
    # pre-activations -5.3e-9 in float64 against 0.045 for the layer, and a
    # correct float32 GEMM (error 7e-9) may put it on either side of zero,
    # flipping that unit's gradient (3e-3 of the bias). Such a batch is
    # drawn again; 1e-6 leaves ten times float32's error on these sums.
    for seed in range(1, 6):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(2, 3, size, size, generator=g)
        y = torch.randint(0, 10, (2,), generator=g)
        cpu_model = no_draws(make())
        cpu_model.load_state_dict(state)
        margins = relu_margin(cpu_model)
        want = run(cpu_model, x, y, "cpu")
        if min(margins, default=1.0) >= 1e-6:
            break
        print(f"{name}: batch {seed} has a ReLU input {min(margins):.2g} of its scale from zero: drawn again")
    assert min(margins, default=1.0) >= 1e-6, f"{name}: no batch without a ReLU input at float32 noise from zero"

    ltt.metrics_reset()
    dev_model = no_draws(make())
    dev_model.load_state_dict(state)
    got = run(dev_model, x, y, ltt.device())
    fallbacks = ltt.fallback_counts()
    print(f"{name}: CPU fallbacks {fallbacks or 'none'}")

    # Distances relative to each tensor's largest magnitude on the CPU.
    # Tensors that training leaves at zero to float32 noise (a bias whose
    # gradient batch norm cancels: |value| < NULL) carry no signal to
    # compare relatively; they must stay below NULL in absolute terms.
    pairs = [("losses", got[0], want[0]), ("eval output", got[1], want[1])]
    pairs += [(n, got[2][n], want[2][n]) for n in want[2]]
    scale = {w: b.abs().max().item() if b.numel() else 0.0 for w, _, b in pairs}
    null = {w for w in scale if scale[w] < NULL}
    failures = [f"{w}: |{distance(a, b):.3g}| near zero" for w, a, b in pairs if w in null and distance(a, b) > NULL]
    rel = {w: distance(a, b) / scale[w] for w, a, b in pairs if w not in null}
    worst = max(rel, key=rel.get)
    bound = 1e-4
    if rel[worst] > bound:
        # The CPU's own float32-vs-float64 distance for this model (its worst
        # tensor): batch norm over batches of 2 makes some models ill-conditioned.
        m64 = no_draws(make())
        m64.load_state_dict(state)
        ref64 = run(m64, x, y, "cpu", torch.float64)
        by_name = {w: b for w, _, b in pairs}  # the CPU float32 values
        ref = {"losses": ref64[0], "eval output": ref64[1], **ref64[2]}
        cpu64 = max(distance(by_name[w], ref[w]) / scale[w] for w in rel)
        bound = max(bound, 2 * cpu64)
        print(f"{name}: CPU float32 vs float64 {cpu64:.3g} (relative, worst tensor)")
    print(f"{name}: device vs CPU {rel[worst]:.3g} (relative, worst: {worst}); bound {bound:.3g}; "
          f"{len(null)} tensors near zero")
    failures += [f"{w}: {r:.3g}" for w, r in rel.items() if r > bound]
    assert not failures, f"{name}: beyond {bound:.3g}: " + "; ".join(failures[:8])
    assert not fallbacks, f"{name} ran ops on the CPU: {fallbacks}"
