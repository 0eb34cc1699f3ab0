"""The import hook of `python3 -m lazytensor.xla`: torch_xla and torch_xla.*
resolve to lazytensor.xla's modules (the same module objects), in this
process only. Nothing named torch_xla is installed; a real torch_xla on the
path is shadowed in this process and untouched on disk."""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

from ._names import PACKAGE

_ROOT = "torch_xla"


class _Alias(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class TorchXlaFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _ROOT and not fullname.startswith(_ROOT + "."):
            return None
        ours = PACKAGE + fullname[len(_ROOT):]
        try:
            found = importlib.util.find_spec(ours) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise ModuleNotFoundError(f"{fullname} is not implemented by lazytensor.xla (the PyTorch/XLA API "
                                      "over the lazytensor device)", name=fullname)
        module = importlib.import_module(ours)
        return importlib.machinery.ModuleSpec(fullname, _Alias(module),
                                              is_package=hasattr(module, "__path__"))


def install():
    if not any(isinstance(f, TorchXlaFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchXlaFinder())
        for name in [n for n in sys.modules if n == _ROOT or n.startswith(_ROOT + ".")]:
            del sys.modules[name]  # a real torch_xla imported before: ours from now on
