"""Models written in Python on lazytensor.nn, with torchvision's parameter names."""
from .resnet import ResNet, BasicBlock, Bottleneck, resnet18, resnet20, resnet50

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet20", "resnet50"]
