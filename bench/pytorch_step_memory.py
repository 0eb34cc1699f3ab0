# Peak memory of one PyTorch eager ResNet-20 training step (batch 128,
# 1x28x28, AdamW), for comparison with lazytensor's PeakBytes for the same
# step (`lazytensor train --data fake --steps 5 --report json`, peak_bytes).
# PyTorch's CPU allocator has no counters, so this reads the growth of the
# process's peak RSS across the steps, from a point where the model and the
# batch exist (the growth also holds the AdamW state and the gradients).
#   NT=2 /usr/bin/python3 bench/pytorch_step_memory.py
import os, resource, sys, torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch"))
from resnet20 import ResNet20
torch.manual_seed(0); torch.set_num_threads(int(os.environ.get("NT", "2")))
m = ResNet20(); opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=1e-4)
x = torch.randn(128, 1, 28, 28); y = torch.randint(0, 10, (128,))
def step():
    loss = torch.nn.functional.cross_entropy(m(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(5): step()
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
params = sum(p.numel() for p in m.parameters()) * 4
print(f"pytorch eager resnet20 bs128: peak RSS growth over 5 steps {(rss1 - rss0) / 1024:.1f} MiB "
      f"(weights {params / 2**20:.1f} MiB held before)")
