#!/bin/sh
# The execution table of the README: each workload on PyTorch eager
# (bench/pytorch/) and on lazytensor, back to back, same thread count (NT,
# default 2), so the two sides see the same machine. Needs Debian's PyTorch
# (scripts/install-deps.sh) and a built tree (make build). Takes about
# 10 minutes. Exits non-zero, naming the step, when any step fails.
#   sh bench/compare_execution.sh [rounds]
here=$(cd "$(dirname "$0")/.." && pwd)
nt=${NT:-2}
rounds=${1:-1}
py=/usr/bin/python3
b=$here/build
tmp=${TMPDIR:-/tmp}/lt-compare-execution.$$
export LT_NUM_THREADS=$nt NT=$nt
fail() { echo "compare_execution: $*" >&2; rm -f "$tmp"; exit 1; }
# runs a step into $tmp (a pipe would hide its exit status), then prints its last line
last() { "$@" > "$tmp" || fail "failed: $*"; tail -1 "$tmp"; }
$py -c 'import torch, torchvision' 2>/dev/null || fail "Debian's PyTorch is not installed (scripts/install-deps.sh)"
[ -x "$b/lazytensor" ] || fail "$b/lazytensor is missing (make build)"
i=0
while [ $i -lt "$rounds" ]; do
    i=$((i + 1))
    echo "== round $i: ResNet-20 on Fashion-MNIST, one epoch, batch 128, AdamW lr 3e-3 cosine"
    last $py "$here/bench/pytorch_fmnist.py" 0.003 cosine
    "$b/lazytensor" train --report json > "$tmp" || fail "lazytensor train failed"
    $py -c 'import json,sys; d=json.load(open(sys.argv[1])); print("lazytensor: %.0f img/s, test acc %.2f%%" % (d["images_per_sec"], d["test_accuracy"]))' "$tmp" ||
        fail "reading lazytensor's report"
    for w in "resnet18 8" "resnet50 2"; do
        set -- $w
        echo "== round $i: $1 step, batch $2, 64x64, AdamW"
        last $py "$here/bench/pytorch/train_bench.py" $1 $2 64 eager
        "$b/bench_conv" $1 $2 64 6 cpu || fail "bench_conv $1 failed"
    done
    echo "== round $i: ResNet-20 step peak memory, batch 128"
    $py "$here/bench/pytorch_step_memory.py" || fail "pytorch_step_memory.py failed"
    "$b/bench_step_memory" || fail "bench_step_memory failed"
done
echo "== fused AdamW over 11M parameters vs the copy-bandwidth floor"
"$b/bench_cpu" 10 || fail "bench_cpu failed"
rm -f "$tmp"
