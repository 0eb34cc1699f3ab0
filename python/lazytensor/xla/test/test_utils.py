"""torch_xla.test.test_utils: progress lines and the (optional) TensorBoard writer."""
import time

from .._names import missing as _missing


def now(format="%H:%M:%S"):
    return time.strftime(format)


def print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    """Prints one line of training progress (every rank: torch_xla does too)."""
    fields = [f"Training Device={device}", f"Epoch={epoch}" if epoch is not None else None, f"Step={step}",
              f"Loss={loss:.5f}", f"Rate={rate:.2f}", f"GlobalRate={global_rate:.2f}", f"Time={now()}"]
    print("|", " ".join(f for f in fields if f), flush=True)
    if summary_writer is not None:
        write_to_summary(summary_writer, step, dict_to_write={"examples/sec": rate})


def print_test_update(device, accuracy, epoch=None, step=None):
    fields = [f"Test Device={device}", f"Step={step}" if step is not None else None,
              f"Epoch={epoch}" if epoch is not None else None,
              f"Accuracy={accuracy:.2f}" if accuracy is not None else None, f"Time={now()}"]
    print("|", " ".join(f for f in fields if f), flush=True)


def get_summary_writer(logdir):
    """A TensorBoard SummaryWriter for logdir, or None (no logdir or no tensorboard installed)."""
    if not logdir:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except Exception:
        return None
    return SummaryWriter(log_dir=logdir)


def write_to_summary(summary_writer, global_step=None, dict_to_write={}, write_xla_metrics=False):
    if summary_writer is None:
        return
    for k, v in dict_to_write.items():
        summary_writer.add_scalar(k, v, global_step)
    if write_xla_metrics:
        from ..debug import metrics
        for name in ("CompileTime", "ExecuteTime"):
            d = metrics.metric_data(name)
            if d:
                summary_writer.add_scalar(f"xla/{name}", d[1] / max(d[0], 1), global_step)


def close_summary_writer(summary_writer):
    if summary_writer is not None:
        summary_writer.flush()
        summary_writer.close()


__getattr__ = _missing(__name__)
