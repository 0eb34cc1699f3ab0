"""lazytensor.optim: torch.optim's classes over the library's optimizers.

The update itself is the C library's (PyTorch 1.13's single-tensor
formulas, traced into the step's graph); this layer keeps torch's
param_groups dicts and pushes changed hyperparameters to the library before
each step. Hyperparameters are runtime scalars: changing a learning rate
never recompiles."""
from . import lr_scheduler
from .optimizer import Optimizer, SGD, Adam, AdamW

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
