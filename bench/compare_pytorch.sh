#!/bin/sh
# The tracing-cost comparison of the README, in one run on one machine:
# PyTorch's per-op cost (bench/pytorch/lerp_cpp.cpp, view_cpp.cpp: eager and
# the lazy tensor core) next to ours (build/bench_trace). Needs libtorch-dev
# (scripts/install-deps.sh) and a built tree (make build). Exits
# non-zero, naming the step, when any step fails.
#   sh bench/compare_pytorch.sh
here=$(cd "$(dirname "$0")/.." && pwd)
out=${TMPDIR:-/tmp}/lt-bench-pytorch
fail() { echo "compare_pytorch: $*" >&2; exit 1; }
TORCH_INC=/usr/include/torch/csrc/api/include
[ -d "$TORCH_INC" ] || fail "libtorch-dev is not installed (scripts/install-deps.sh)"
[ -x "$here/build/bench_trace" ] || fail "build/bench_trace is missing (make build)"
mkdir -p "$out" || fail "cannot create $out"
for p in lerp_cpp view_cpp; do
    src="$here/bench/pytorch/$p.cpp"
    if [ ! -x "$out/$p" ] || [ "$src" -nt "$out/$p" ]; then
        echo "== building $p (libtorch; a minute or two)"
        g++ -O2 -std=c++17 "$src" -o "$out/$p" -I$TORCH_INC -ltorch -ltorch_cpu -lc10 || fail "building $p failed"
    fi
done
echo "== PyTorch eager and lazy tensor core (lerp, 2x3, one thread)"
"$out/lerp_cpp" || fail "lerp_cpp failed"
echo "== PyTorch: x[0:32].lerp_(g) chained 50 and 400 times"
M=50 "$out/view_cpp" || fail "view_cpp failed"
M=400 "$out/view_cpp" || fail "view_cpp failed"
echo "== lazytensor trace cost"
"$here/build/bench_trace" || fail "bench_trace failed"
