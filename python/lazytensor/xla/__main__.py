"""python3 -m lazytensor.xla SCRIPT ARGS...: runs a PyTorch/XLA script with
its torch_xla imports resolved to lazytensor.xla (this process only), as
`python3 SCRIPT ARGS...` would run it (sys.argv, __main__, sys.path[0]).
Under `mpirun -np N` every process is one rank."""
import os
import runpy
import sys


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: python3 -m lazytensor.xla SCRIPT [ARGS...]\n"
              "       mpirun -np N python3 -m lazytensor.xla SCRIPT [ARGS...]\n"
              "Runs a PyTorch/XLA training script on the lazytensor device.", file=sys.stderr)
        return 2
    from lazytensor.xla import _hook
    _hook.install()
    script = sys.argv[1]
    if not os.path.exists(script):
        print(f"python3 -m lazytensor.xla: can't open file {script!r}", file=sys.stderr)
        return 2
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
