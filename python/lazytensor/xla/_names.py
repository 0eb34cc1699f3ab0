"""How lazytensor.xla answers a torch_xla name it does not have.

Every module of the package ends with ``__getattr__ = missing(__name__)``:
a submodule that exists is imported on first use (as ``torch_xla.runtime``
after ``import torch_xla``), anything else raises ``MissingName``, an
AttributeError (so ``hasattr`` stays False) whose message is the torch_xla
name the script asked for, at the line that asked for it.
"""
import importlib
import importlib.util

PACKAGE = __name__.rsplit(".", 1)[0]  # lazytensor.xla


def torch_xla_name(module_name):
    """lazytensor.xla.core.xla_model -> torch_xla.core.xla_model."""
    assert module_name == PACKAGE or module_name.startswith(PACKAGE + ".")
    return "torch_xla" + module_name[len(PACKAGE):]


class MissingName(AttributeError):
    pass


def not_implemented(name, why=""):
    return NotImplementedError(f"{name} is not implemented by lazytensor.xla{': ' + why if why else ''}")


def _is_package(module_name):
    import sys
    return hasattr(sys.modules.get(module_name), "__path__")


def missing(module_name):
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        sub = f"{module_name}.{name}"
        if not name.startswith("_") and _is_package(module_name) and importlib.util.find_spec(sub) is not None:
            return importlib.import_module(sub)
        raise MissingName(f"{torch_xla_name(module_name)}.{name} is not implemented by lazytensor.xla "
                          f"(the PyTorch/XLA API over the lazytensor device)")
    return __getattr__
