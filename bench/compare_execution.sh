#!/bin/sh
# The execution table of the README (issue 5): each workload on PyTorch eager
# and on lazytensor, back to back, same thread count (NT, default 2), so the
# two sides see the same machine. Needs Debian's PyTorch (python3-torch,
# python3-torchvision) and a built tree (make build). Takes about 10 minutes.
#   sh bench/compare_execution.sh [rounds]
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
anchors=${ANCHORS:-$here/../shared/anchors}
nt=${NT:-2}
rounds=${1:-1}
py=/usr/bin/python3
b=$here/build
export LT_NUM_THREADS=$nt NT=$nt
i=0
while [ $i -lt "$rounds" ]; do
    i=$((i + 1))
    echo "== round $i: ResNet-20 on Fashion-MNIST, one epoch, batch 128, AdamW lr 3e-3 cosine"
    $py "$here/bench/pytorch_fmnist.py" 0.003 cosine | tail -1
    "$b/lazytensor" train --report json | tail -1 | $py -c \
        'import json,sys; d=json.load(sys.stdin); print("lazytensor: %.0f img/s, test acc %.2f%%" % (d["images_per_sec"], d["test_accuracy"]))'
    for w in "resnet18 8" "resnet50 2"; do
        set -- $w
        echo "== round $i: $1 step, batch $2, 64x64, AdamW"
        $py "$anchors/train_bench.py" $1 $2 64 eager | tail -1
        "$b/bench_conv" $1 $2 64 6 cpu
    done
    echo "== round $i: ResNet-20 step peak memory, batch 128"
    $py "$here/bench/pytorch_step_memory.py"
    "$b/bench_step_memory"
done
echo "== fused AdamW over 11M parameters vs the copy-bandwidth floor"
"$b/bench_cpu" 10
