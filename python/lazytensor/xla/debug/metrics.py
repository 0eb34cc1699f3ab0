"""torch_xla.debug.metrics: the core's metrics under PyTorch/XLA's names.

The core names its metrics as PyTorch/XLA does (CompileTime, ExecuteTime,
UncachedCompile, CachedCompile, MarkStep, ...): counters, levels and gauges
are counters here, timers and distributions are metrics. CPU fallbacks are
the counters aten::NAME. Timers' accumulators are in nanoseconds, as
PyTorch/XLA's."""
import lazytensor.torch as _ltt

from .._names import missing as _missing


def _names():
    """({counter name}, {metric name: is a timer}) from the core's report."""
    counters, metrics = [], {}
    section = None
    for line in _ltt._bridge.metrics_report().splitlines():
        if not line.startswith("  "):
            s = line.strip()
            section = ("counter" if s.startswith(("counters", "levels", "gauges")) else
                       "metric" if s.startswith("timers") else None)
            continue
        words = line.split()
        if not words or section is None or words[0] == "count":
            continue
        if section == "counter":
            counters.append(words[0])
        else:
            metrics[words[0]] = len(words) > 7  # a timer: each duration is "N unit"
    return counters, metrics


def counter_names():
    return _names()[0] + sorted("aten::" + k for k in _ltt.fallback_counts())


def counter_value(name):
    if name.startswith("aten::"):
        return _ltt.fallback_counts().get(name[len("aten::"):])
    return int(_ltt.metric(name)) if name in _names()[0] else None


def metric_names():
    return list(_names()[1])


def metric_data(name):
    """(TotalSamples, Accumulator, Samples) as PyTorch/XLA's; Samples is empty
    (the core keeps percentiles, not the samples), or None for an unknown name."""
    metrics = _names()[1]
    if name not in metrics:
        return None
    total = _ltt.metric(name)
    return int(_ltt.metric(name + ".count")), total * 1e9 if metrics[name] else total, []


def _fmt(name, timer):
    count, acc, _ = metric_data(name)
    if timer:
        p50, p90, p99 = (_ltt.metric(f"{name}.p{p}") * 1e3 for p in (50, 90, 99))
        return (f"Metric: {name}\n  TotalSamples: {count}\n  Accumulator: {acc / 1e6:.3f}ms\n"
                f"  Percentiles: 50%={p50:.3f}ms; 90%={p90:.3f}ms; 99%={p99:.3f}ms\n")
    return f"Metric: {name}\n  TotalSamples: {count}\n  Accumulator: {acc:.0f}\n"


def metrics_report():
    """The core's report (its metrics carry PyTorch/XLA's names), then the
    aten::NAME CPU fallback counters in PyTorch/XLA's format ("Counter:
    aten::NAME / Value: N"; none when nothing fell back)."""
    return _ltt._bridge.metrics_report()


def short_metrics_report(counter_names=None, metric_names=None):
    counters, metrics = _names()
    counter_names = counter_names or ["CachedCompile", "UncachedCompile", "MarkStep"]
    metric_names = metric_names or ["CompileTime", "ExecuteTime", "TransferToDeviceTime", "TransferFromDeviceTime"]
    out = [_fmt(m, metrics[m]) for m in metric_names if m in metrics]
    out += [f"Counter: {c}\n  Value: {counter_value(c)}\n" for c in counter_names if counter_value(c) is not None]
    out += [f"Counter: aten::{k}\n  Value: {v}\n" for k, v in sorted(_ltt.fallback_counts().items())]
    return "".join(out)


def clear_all():
    _ltt.metrics_reset()


def clear_counters():
    _ltt.metrics_reset()


def clear_metrics():
    _ltt.metrics_reset()


def executed_fallback_ops():
    return sorted("aten::" + k for k in _ltt.fallback_counts())


__getattr__ = _missing(__name__)
