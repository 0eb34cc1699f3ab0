"""ResNets as torchvision builds them (v1.5: a Bottleneck's stride is on its
3x3 conv), with torchvision's module and parameter names, plus the CIFAR-style
ResNet-20 (3x3/1 stem, no pool, 16/32/64 channels, 1x1 conv + BN shortcut
where the shape changes).

Initialization: one pass in module order after construction, as
torchvision's; ResNet-18/50 convs kaiming_normal_(fan_out, relu), ResNet-20
convs nn.Conv2d's default, BN weight 1 / bias 0, fc Linear's default. The C
library's lt_model_new draws the same values in the same order, so a seed
gives the same weights from Python and from C."""
from .. import nn


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, 3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """layers: blocks per stage; cifar: the 3x3/1 stem without max pool (ResNet-20's layout)."""

    def __init__(self, block, layers, num_classes=1000, in_channels=3, cifar=False):
        super().__init__()
        with nn.init.deferred():
            width = 16 if cifar else 64
            self.inplanes = width
            if cifar:
                self.conv1 = nn.Conv2d(in_channels, width, 3, stride=1, padding=1, bias=False)
            else:
                self.conv1 = nn.Conv2d(in_channels, width, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.relu = nn.ReLU(inplace=True)
            if not cifar:
                self.maxpool = nn.MaxPool2d(3, 2, 1)
            for i, n in enumerate(layers):
                setattr(self, f"layer{i + 1}", self._make_layer(block, width << i, n, 1 if i == 0 else 2))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear((width << (len(layers) - 1)) * block.expansion, num_classes)
        self.cifar = cifar
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if cifar:
                    m.reset_parameters()
                else:
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.Linear):
                m.reset_parameters()

    def _make_layer(self, block, planes, blocks, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        if not self.cifar:
            x = self.maxpool(x)
        for i in range(1, 5):
            layer = self._modules.get(f"layer{i}")
            if layer is not None:
                x = layer(x)
        x = self.avgpool(x).flatten(1)
        return self.fc(x)


def resnet18(num_classes=1000, in_channels=3):
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes, in_channels)


def resnet50(num_classes=1000, in_channels=3):
    return ResNet(Bottleneck, [3, 4, 6, 3], num_classes, in_channels)


def resnet20(num_classes=10, in_channels=1):
    return ResNet(BasicBlock, [3, 3, 3], num_classes, in_channels, cifar=True)
