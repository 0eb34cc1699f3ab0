#!/bin/sh
# Runs PyTorch's anchors (../shared/anchors) and our trace benchmark in one
# go, so the comparison is made on the same machine at the same time.
# Needs Debian's PyTorch: apt-get install -y python3-torch libtorch-dev
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
anchors=${ANCHORS:-$here/../shared/anchors}
out=${TMPDIR:-/tmp}/lt-anchors
mkdir -p "$out"
TORCH_INC=/usr/include/torch/csrc/api/include
for p in lerp_cpp view_cpp; do
    [ -x "$out/$p" ] || g++ -O2 -std=c++17 "$anchors/$p.cpp" -o "$out/$p" -I$TORCH_INC -ltorch -ltorch_cpu -lc10
done
echo "== PyTorch eager and lazy tensor core (lerp, 2x3, one thread)"
"$out/lerp_cpp"
echo "== PyTorch: x[0:32].lerp_(g) chained 400 times"
M=400 "$out/view_cpp"
echo "== lazytensor trace cost"
"$here/build/bench_trace"
