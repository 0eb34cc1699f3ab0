#!/usr/bin/python3
"""Writes tests/data/gpt_train.safetensors, which tests/test_gpt.c compares
against: a tiny 4-layer GPT (the nanoGPT model, attention written out as
PyTorch 1.13 has no F.scaled_dot_product_attention), its initial weights,
20 batches of tokens and the 20 losses of AdamW steps with gradient
clipping.

Run with Debian's PyTorch 1.13:  /usr/bin/python3 scripts/make_gpt_fixture.py
The output is committed; the build and the tests never need PyTorch.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import OUT, save  # noqa: E402

CFG = dict(n_layer=4, n_head=4, n_embd=32, block_size=16, vocab_size=64)
BATCH, STEPS, LR, WD, CLIP = 4, 20, 3e-3, 0.1, 1.0


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head = c["n_head"]
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"])
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"])
        T = c["block_size"]
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T), persistent=False)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"])
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"])

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(c["n_embd"]), Attention(c)
        self.ln_2, self.mlp = nn.LayerNorm(c["n_embd"]), MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
            wpe=nn.Embedding(c["block_size"], c["n_embd"]),
            h=nn.ModuleList([Block(c) for _ in range(c["n_layer"])]),
            ln_f=nn.LayerNorm(c["n_embd"])))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied
        self.apply(self._init)
        for n, p in self.named_parameters():
            if n.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c["n_layer"]))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx):
        T = idx.size(1)
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T))
        for b in self.transformer.h:
            x = b(x)
        return self.lm_head(self.transformer.ln_f(x))


def main():
    torch.manual_seed(0)
    m = GPT(CFG)
    init = [(k, v.clone()) for k, v in m.state_dict().items() if k != "lm_head.weight"]
    g = torch.Generator().manual_seed(1)
    # learnable sequences (a random start and stride, counting mod V) so the loss falls
    start = torch.randint(0, CFG["vocab_size"], (STEPS, BATCH, 1), generator=g)
    stride = torch.randint(1, 4, (STEPS, BATCH, 1), generator=g)
    data = (start + stride * torch.arange(CFG["block_size"] + 1)) % CFG["vocab_size"]
    x, y = data[:, :, :-1].contiguous(), data[:, :, 1:].contiguous()
    decay = [p for p in m.parameters() if p.dim() >= 2]
    no_decay = [p for p in m.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.95), eps=1e-8, foreach=False)
    losses = []
    for s in range(STEPS):
        logits = m(x[s])
        loss = F.cross_entropy(logits.view(-1, CFG["vocab_size"]), y[s].view(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), CLIP)
        opt.step()
        losses.append(loss.item())
    print("losses", " ".join(f"{v:.5f}" for v in losses))
    meta = dict(CFG, batch=BATCH, lr=LR, weight_decay=WD, clip=CLIP)
    save(os.path.join(OUT, "gpt_train.safetensors"),
         init + [("x", x), ("y", y), ("losses", torch.tensor(losses, dtype=torch.float64))], meta)


if __name__ == "__main__":
    main()
