"""StepLR and CosineAnnealingLR: the library's schedules (torch's recursive
forms); the new rates are written back into the param_groups dicts."""
from .. import _C


class _Scheduler:
    def __init__(self, optimizer, kind, n, x):
        self.optimizer = optimizer
        for i in range(len(optimizer.param_groups)):
            optimizer._push(i)
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self._c = _C.scheduler(optimizer._c, kind, n, x)
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def step(self):
        opt = self.optimizer
        for i in range(len(opt.param_groups)):
            opt._push(i)
        self._c.step()
        for i, g in enumerate(opt.param_groups):
            g["lr"] = opt._pushed[i]["lr"] = opt._c.get(i, "lr")
        self._last_lr = [g["lr"] for g in opt.param_groups]

    @property
    def last_epoch(self):
        return self._c.epoch()

    def get_last_lr(self):
        return list(self._last_lr)


class StepLR(_Scheduler):
    def __init__(self, optimizer, step_size, gamma=0.1):
        super().__init__(optimizer, "step", step_size, gamma)


class CosineAnnealingLR(_Scheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0):
        super().__init__(optimizer, "cosine", T_max, eta_min)
