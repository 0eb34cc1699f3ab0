# PyTorch eager CPU training of a CIFAR-style ResNet-20 on Fashion-MNIST
# (Debian package dataset-fashion-mnist), AdamW, batch 128. Prints epoch time,
# images/s and test accuracy.  Usage: NT=2 python3 fmnist_resnet20.py [epochs]
import gzip, os, sys, time, numpy as np, torch, torch.nn.functional as F
from resnet20 import ResNet20
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
