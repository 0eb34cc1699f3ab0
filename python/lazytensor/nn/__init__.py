"""lazytensor.nn: torch.nn's Module and layers in plain Python over the C ops."""
from . import functional, init
from .parameter import Parameter
from .module import Module
from .modules import (Linear, Conv2d, BatchNorm2d, ReLU, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Flatten, Dropout,
                      Embedding, Identity, Sequential, ModuleList, CrossEntropyLoss, MSELoss)

__all__ = ["functional", "init", "Parameter", "Module", "Linear", "Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d",
           "AvgPool2d", "AdaptiveAvgPool2d", "Flatten", "Dropout", "Embedding", "Identity", "Sequential",
           "ModuleList", "CrossEntropyLoss", "MSELoss"]
