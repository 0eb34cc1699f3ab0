# PyTorch eager CPU training of a CIFAR-style ResNet-20 on Fashion-MNIST
# (Debian package dataset-fashion-mnist), AdamW, batch 128. Prints epoch time,
# images/s and test accuracy.  Usage: NT=2 python3 fmnist_resnet20.py [epochs]
import gzip, os, sys, time, numpy as np, torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0); torch.set_num_threads(int(os.environ.get("NT", "2")))
D = "/usr/share/datasets/fashion-mnist/"
def idx(name, off):
    return np.frombuffer(gzip.open(D + name).read(), np.uint8, offset=off)
xtr = torch.tensor(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28), dtype=torch.float32) / 255.
ytr = torch.tensor(idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
xte = torch.tensor(idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28), dtype=torch.float32) / 255.
yte = torch.tensor(idx("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
mean, std = 0.2860, 0.3530
xtr = (xtr - mean) / std; xte = (xte - mean) / std
class Block(nn.Module):
    def __init__(s, cin, cout, stride):
        super().__init__()
        s.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); s.b1 = nn.BatchNorm2d(cout)
        s.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); s.b2 = nn.BatchNorm2d(cout)
        s.sc = None
        if stride != 1 or cin != cout:
            s.sc = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
    def forward(s, x):
        o = F.relu(s.b1(s.c1(x))); o = s.b2(s.c2(o))
        return F.relu(o + (x if s.sc is None else s.sc(x)))
class ResNet20(nn.Module):
    def __init__(s, cin=1, n=3, classes=10):
        super().__init__()
        s.c = nn.Conv2d(cin, 16, 3, 1, 1, bias=False); s.b = nn.BatchNorm2d(16)
        layers, c = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(n):
                layers.append(Block(c, cout, stride if i == 0 else 1)); c = cout
        s.layers = nn.Sequential(*layers); s.fc = nn.Linear(64, classes)
    def forward(s, x):
        x = F.relu(s.b(s.c(x))); x = s.layers(x)
        return s.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))
m = ResNet20(); opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=1e-4)
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 1; bs = 128
for ep in range(epochs):
    m.train(); perm = torch.randperm(len(xtr)); t0 = time.perf_counter()
    for i in range(0, len(xtr) - bs + 1, bs):
        idb = perm[i:i + bs]
        loss = F.cross_entropy(m(xtr[idb]), ytr[idb])
        opt.zero_grad(); loss.backward(); opt.step()
    dt = time.perf_counter() - t0
    m.eval(); correct = 0
    with torch.no_grad():
        for i in range(0, len(xte), 1000):
            correct += (m(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
    print(f"epoch {ep+1}: train {dt:.1f} s ({(len(xtr)//bs)*bs/dt:.0f} img/s), last loss {loss.item():.3f}, test acc {correct/len(xte)*100:.2f}%", flush=True)
