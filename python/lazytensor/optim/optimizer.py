from .. import _C
from .._tensor import Tensor

# torch's option -> the library's option name(s)
_SPLIT = {"betas": ("beta1", "beta2")}


class Optimizer:
    _kind = None
    _defaults_order = ()

    def __init__(self, params, defaults):
        self.defaults = defaults
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups = []
        self._pushed = []
        first = self._fill(groups[0])
        self._c = _C.optimizer(self._kind, first["params"], *self._ctor_args(first))
        self.param_groups.append(first)
        self._pushed.append({})
        self._push(0)
        for g in groups[1:]:
            self.add_param_group(g)

    def _fill(self, group):
        g = dict(group)
        ps = g["params"]
        g["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
        for p in g["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, got {type(p).__name__}")
        for k, v in self.defaults.items():
            g.setdefault(k, v)
        return g

    def add_param_group(self, group):
        g = self._fill(group)
        idx = self._c.add_group(g["params"])
        self.param_groups.append(g)
        self._pushed.append({})
        self._push(idx)

    def _push(self, i):
        """Sends group i's changed options to the library (a dict compare per option: no recompiles)."""
        g, done = self.param_groups[i], self._pushed[i]
        for k in self.defaults:
            v = g[k]
            if done.get(k) == v:
                continue
            if k in _SPLIT:
                for name, x in zip(_SPLIT[k], v):
                    self._c.set(i, name, float(x))
            else:
                self._c.set(i, k, float(v))
            done[k] = v

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for i in range(len(self.param_groups)):
            self._push(i)
        self._c.step()
        return loss

    def zero_grad(self, set_to_none=True):
        self._c.zero_grad()

    # ---- checkpoints: torch's layout (state keyed by parameter index) ----
    def state_dict(self):
        state = {}
        for name, t in self._c.state():
            slot, i = name.rsplit(".", 1)
            state.setdefault(int(i), {})[slot] = t
        for i in state:
            state[i]["step"] = self._c.get_step(i)
        groups, start = [], 0
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = list(range(start, start + len(g["params"])))
            start += len(g["params"])
            groups.append(d)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, sd):
        names, tensors = [], []
        for i, slots in sd["state"].items():
            for slot, t in slots.items():
                if slot != "step":
                    names.append(f"{slot}.{i}")
                    tensors.append(t)
        self._c.load_state(names, tensors)
        for i, slots in sd["state"].items():
            if "step" in slots:
                self._c.set_step(int(i), int(slots["step"]))
        for g, saved in zip(self.param_groups, sd["param_groups"]):
            g.update({k: v for k, v in saved.items() if k != "params"})

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n" + "".join(f"    {k}: {g[k]}\n" for k in sorted(self.defaults))
        return s + ")"


class SGD(Optimizer):
    _kind = "sgd"

    def __init__(self, params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    @staticmethod
    def _ctor_args(g):
        return g["lr"], g["momentum"], g["dampening"], g["weight_decay"], 0.0, g["nesterov"]


class Adam(Optimizer):
    _kind = "adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    @staticmethod
    def _ctor_args(g):
        return g["lr"], g["betas"][0], g["betas"][1], g["eps"], g["weight_decay"], g["amsgrad"]


class AdamW(Adam):
    _kind = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
