#!/bin/sh
# The three data-parallel numbers of the README ("Training on several
# processes or machines"), in one run on one machine: ResNet-20 on
# Fashion-MNIST, AdamW, global batch 128, alternating REPS rounds of
#   A  mpirun -np 2 lazytensor train --batch-size 64 --threads 1
#   B  lazytensor train --batch-size 128 --threads 2
#   C  PyTorch 1.13 DDP (gloo), 2 processes x 1 thread x 64 (bench/pytorch_ddp.py)
# and prints per round: the share of A's step spent waiting on communication
# (goal <= 10%), A/B img/s (goal >= 0.9) and A/C img/s (goal >= 1.5).
# Ours: the CLI's images_per_sec of --report json (compilation included)
# and comm_exposed_ms_per_step of execute_ms_per_step.
# Needs a built tree, OpenMPI and /usr/bin/python3 with torch. Exits
# non-zero, naming the step, when any step fails.
#   sh bench/compare_dist.sh   (defaults STEPS=30 TORCH_STEPS=20 REPS=3; DATA=fake: generated images)
here=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "compare_dist: $*" >&2; exit 1; }
steps=${STEPS:-30}
data=${DATA:-fashion-mnist}
lt="$here/build/lazytensor"
[ -x "$lt" ] || fail "build/lazytensor is missing (make build)"
command -v mpirun >/dev/null || fail "mpirun is missing (scripts/install-deps.sh)"
/usr/bin/python3 -c "import torch.distributed" 2>/dev/null || fail "PyTorch is missing under /usr/bin/python3"
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run="train --model resnet20 --data $data --steps $steps --test-size 0 --log-every 100000 --report json"
report() { # "img/s waited-share" of a --report json on stdin
    awk '{ for (i = 1; i <= NF; i++) v[$i] = $(i + 1) } END {
        e = v["\"execute_ms_per_step\":"] + 0
        if (v["\"images_per_sec\":"] > 0 && e > 0) printf "%s %.4f", v["\"images_per_sec\":"] + 0, v["\"comm_exposed_ms_per_step\":"] / e }'
}
torch_kind=$([ "$data" = fake ] && echo fake || echo fashion)
for i in $(seq "${REPS:-3}"); do
    a=$(mpirun --oversubscribe -np 2 "$lt" $run --batch-size 64 --threads 1 2>/dev/null | report)
    [ -n "$a" ] || fail "mpirun -np 2 lazytensor train failed"
    b=$("$lt" $run --batch-size 128 --threads 2 2>/dev/null | report)
    [ -n "$b" ] || fail "lazytensor train (1 process x 2 threads) failed"
    c=$(NT=1 /usr/bin/python3 "$here/bench/pytorch_ddp.py" 2 64 "${TORCH_STEPS:-20}" "$torch_kind" | sed -n 's/.*: \([0-9.]*\) img\/s.*/\1/p')
    [ -n "$c" ] || fail "bench/pytorch_ddp.py failed"
    echo "$a $b $c" | awk '{ printf "2x1 thread %.0f img/s, waits on communication %.1f%% of the step | 1x2 threads %.0f img/s: ratio %.2f | PyTorch DDP 2x1 %.0f img/s: ratio %.2f\n", $1, 100 * $2, $3, $1 / $3, $5, $1 / $5 }'
done
