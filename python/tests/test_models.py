"""lazytensor.models against torchvision (names, logits) and against the C
library's training loop (`lazytensor train`: same seed -> same losses)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import lazytensor as lt
import lazytensor.nn.functional as F
from lazytensor import models
from conftest import SANITIZED, torch_or_skip


def test_resnet_parameter_names_match_torchvision():
    torch_or_skip()
    tv = pytest.importorskip("torchvision")
    for ours, theirs in ((models.resnet18(), tv.models.resnet18()), (models.resnet50(), tv.models.resnet50())):
        a, b = ours.state_dict(), theirs.state_dict()
        assert list(a) == list(b)
        assert [tuple(v.shape) for v in a.values()] == [tuple(v.shape) for v in b.values()]


def test_resnet18_loads_torchvision_weights_same_logits():
    torch = torch_or_skip()
    tv = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    ref = tv.models.resnet18(num_classes=10)
    with torch.no_grad():  # non-trivial batch-norm statistics
        for m in ref.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    ref.eval()
    ours = models.resnet18(num_classes=10)
    ours.load_state_dict(ref.state_dict())
    ours.eval()
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        want = ref(x).numpy()
    got = ours(lt.from_dlpack(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# The Python side runs in a fresh interpreter like the CLI: importing torch
# (other tests do) sets OpenMP to one thread, and the library's parallel
# reductions round differently with a different thread count.
TRAIN_PY = """
import json, sys
import lazytensor as lt
import lazytensor.nn.functional as F
seed, steps, batch, lr, wd = (float(a) if "." in a or "e" in a else int(a) for a in sys.argv[1:6])
lt.manual_seed(seed)
model = lt.models.resnet20(num_classes=10, in_channels=1)
opt = lt.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd)
loader = lt.data.DataLoader(lt.data.FakeData(60000, 1, 28, 10, seed=seed), batch_size=batch, seed=seed)
losses = []
for step, (x, y) in zip(range(steps), loader):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    lt.mark_step()
    losses.append(loss.item())
print(json.dumps({"losses": losses, "compiles": lt.metric("UncachedCompile")}))
"""


def test_resnet20_trains_like_the_cli():
    cli = os.environ.get("LT_CLI")
    if not cli:
        pytest.skip("LT_CLI (the lazytensor program) is not set; ctest sets it")
    if SANITIZED:
        pytest.skip("a ResNet-20 step takes tens of seconds in the ASan build (no oneDNN); test_nn covers the layers")
    args = ["5", "20", "8", "0.003", "0.0001"]  # seed, steps, batch, lr, weight decay
    seed, steps, batch, lr, wd = args
    out = subprocess.run([cli, "train", "--model", "resnet20", "--data", "fake", "--steps", steps,
                          "--batch-size", batch, "--seed", seed, "--lr", lr, "--lr-schedule", "none",
                          "--weight-decay", wd, "--test-size", "0", "--report", "json"],
                         check=True, capture_output=True, text=True).stdout
    want = json.loads(out)["losses"]
    py = subprocess.run([sys.executable, "-c", TRAIN_PY, *args], check=True, capture_output=True, text=True).stdout
    got = json.loads(py)
    assert len(want) == len(got["losses"]) == 20
    np.testing.assert_array_equal(np.float32(got["losses"]), np.float32(want))
    assert got["compiles"] <= 3  # the first step (with the parameters' init), the second, then cache hits
