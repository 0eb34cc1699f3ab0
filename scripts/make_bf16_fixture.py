#!/usr/bin/python3
"""Writes tests/data/resnet20_bf16_train.safetensors, the fixture of
tests/test_train_bf16.c: a ResNet-20 trained 20 steps under PyTorch's
torch.autocast("cpu", torch.bfloat16) (float32 master weights, AdamW), from
initial weights and a batch stored in the file.

Run with Debian's PyTorch 1.13:  /usr/bin/python3 scripts/make_bf16_fixture.py
The output is committed; the build and the tests never need PyTorch. The
models and the safetensors writer are make_fixtures.py's.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import OUT, ResNet20, save  # noqa: E402


def main():
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(16, 1, 16, 16, generator=g)
    y = torch.randint(0, 10, (16,), generator=g)
    torch.manual_seed(6)
    model = ResNet20(1, 10)
    init = [(k, v.clone()) for k, v in model.state_dict().items()]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)
    model.train()
    losses, losses32 = [], []
    for _ in range(20):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(p.dtype == torch.float32 for p in model.parameters())
    # The same from the same start in float32: how far bfloat16 moves the curve.
    model.load_state_dict(dict(init))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)
    for _ in range(20):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses32.append(loss.item())
    rel = max(abs(a - b) / abs(b) for a, b in zip(losses, losses32))
    print("bf16 autocast losses " + " ".join(f"{v:.4f}" for v in losses) + f"; vs float32: {rel:.2g}")
    save(os.path.join(OUT, "resnet20_bf16_train.safetensors"),
         init + [("x", x), ("y", y), ("losses", torch.tensor(losses, dtype=torch.float64)),
                 ("losses_f32", torch.tensor(losses32, dtype=torch.float64))])


if __name__ == "__main__":
    main()
