# The CIFAR-style ResNet-20 that `lazytensor train --model resnet20` builds
# (3x3 stem, three stages of three basic blocks, 16/32/64 channels, 1x1
# projection shortcuts), in PyTorch, for every PyTorch script in bench/ that
# compares against it. Fashion-MNIST's 1x28x28 and 10 classes by default.
import torch.nn as nn, torch.nn.functional as F

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
