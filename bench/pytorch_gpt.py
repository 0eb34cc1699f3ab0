#!/usr/bin/python3
"""PyTorch 1.13 eager half of bench/bench_gpt.c, on the same nanoGPT model
(scripts/make_gpt_fixture.py; attention written out, as 1.13 has no fused
one), NT threads (default 2):
  /usr/bin/python3 bench/pytorch_gpt.py step [reps] [batch] [block]   GPT
        6/6/384/256, vocab 256, batch 16, AdamW, clip_grad_norm_: median step
        time, and the peak RSS growth over the steps from after the model's
        creation
  /usr/bin/python3 bench/pytorch_gpt.py attn T        attention forward, batch 4,
        6 heads, head dim 64, causal: growth of the peak RSS (one T per process:
        the peak only grows)
"""
import math
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from make_gpt_fixture import GPT  # noqa: E402

torch.set_num_threads(int(os.environ.get("NT", "2")))


def step_bench(reps, B, T):
    cfg = dict(n_layer=6, n_head=6, n_embd=384, block_size=T, vocab_size=256)
    torch.manual_seed(0)
    m = GPT(cfg)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, foreach=False)
    times = []
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for r in range(reps + 2):
        x = torch.randint(0, 256, (B, T))
        y = torch.randint(0, 256, (B, T))
        t0 = time.perf_counter()
        loss = F.cross_entropy(m(x).view(-1, 256), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        if r >= 2:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    print(f"pytorch eager gpt 6/6/384/{T} batch {B} adamw: step {times[len(times) // 2]:.1f} ms "
          f"(median of {reps}, {torch.get_num_threads()} threads), peak RSS growth {rss:.1f} MiB")


def attn_bench(T):
    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 6, T, 64) for _ in range(3))
    mask = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with torch.no_grad():
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(64))
        att = att.masked_fill(mask == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    io = 4 * q.numel() * 4 / 2**20
    print(f"pytorch eager attention fwd B4 H6 T{T} D64 causal: peak RSS growth {(rss1 - rss0) / 1024:.1f} MiB "
          f"(+ inputs and mask held before; inputs+output {io:.1f} MiB), out {y.shape}")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "step"
    if mode == "attn":
        attn_bench(int(sys.argv[2]) if len(sys.argv) > 2 else 1024)
    else:
        step_bench(int(sys.argv[2]) if len(sys.argv) > 2 else 5, int(sys.argv[3]) if len(sys.argv) > 3 else 16,
                   int(sys.argv[4]) if len(sys.argv) > 4 else 256)
