# PyTorch eager baseline for `lazytensor train` (the default recipe): the
# ResNet-20 on Fashion-MNIST of bench/pytorch/fmnist_resnet20.py,
# AdamW batch 128, with the learning rate and schedule as arguments so both
# its constant-lr recipe and our cosine one run in PyTorch the same way.
#   NT=2 /usr/bin/python3 bench/pytorch_fmnist.py [lr] [none|cosine]
import os, runpy, sys, torch
lr = float(sys.argv[1]) if len(sys.argv) > 1 else 3e-3
sched = sys.argv[2] if len(sys.argv) > 2 else "cosine"
pytorch_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch")
src = open(os.path.join(pytorch_dir, "fmnist_resnet20.py")).read()
# Same script, two substitutions: the lr, and a per-step cosine schedule
# (lazytensor's: lr * 0.5 * (1 + cos(pi * step / total))).
src = src.replace("lr=1e-3", f"lr={lr}")
if sched == "cosine":
    src = src.replace("opt.zero_grad(); loss.backward(); opt.step()",
                      "opt.zero_grad(); loss.backward(); opt.step(); sch.step()")
    src = src.replace("for ep in range(epochs):",
                      "sch = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * (len(xtr) // bs))\n"
                      "for ep in range(epochs):")
sys.argv = [sys.argv[0], "1"]
sys.path.insert(0, pytorch_dir)  # its `from resnet20 import ResNet20`
exec(compile(src, "fmnist_resnet20.py", "exec"), {"__name__": "__main__"})
