#!/bin/sh
# Batch norm with its ReLU (+ add) epilogue and its backward's ReLU-mask
# (+ gradient add) prologue fused, the mask recomputed from x where it can
# be (LT_BN_FUSE=2, the default), fused reading the mask from the ReLU's
# output (1), and unfused (0), alternating in one session (FUSE="2 1" picks
# the settings and their order): ResNet-50
# training steps (AdamW, fake data, NT threads, default 2) with kernel
# timelines; prints per run each steady step's wall time, the time of the
# batch-norm family (BN_* kernels, and the RELU / WHERE groups that the
# fusions absorb) and its share of all kernel time. Needs a built tree.
#   sh bench/compare_bn_fuse.sh [rounds] [batch] [image size] [steps]
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2} batch=${2:-32} res=${3:-224} steps=${4:-4}
tmp=${TMPDIR:-/tmp}/lt-bn-fuse.$$
[ -x "$here/build/lazytensor" ] || { echo "compare_bn_fuse: build/lazytensor is missing (make build)" >&2; exit 1; }
i=0
while [ $i -lt "$rounds" ]; do
    i=$((i + 1))
    for f in ${FUSE:-2 1 0}; do
        LT_BN_FUSE=$f LT_NUM_THREADS=${NT:-2} LT_TRACE_FILE=$tmp.json LT_TRACE_KERNELS=1 "$here/build/lazytensor" train \
            --data fake --model resnet50 --image-size "$res" --batch-size "$batch" --steps "$steps" --test-size 0 \
            > "$tmp.log" 2>&1 || { cat "$tmp.log"; rm -f "$tmp.json" "$tmp.log"; exit 1; }
        python3 - "$tmp.json" "round $i LT_BN_FUSE=$f" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
runs = [e for e in ev if e.get("name") == "execute"][1:]  # the first step compiles
fam = lambda n: n.startswith("BN_") or n in ("RELU", "WHERE")
for r in runs:
    t0, t1 = r["ts"], r["ts"] + r["dur"]
    ks = [e for e in ev if e.get("ph") == "X" and e.get("name") not in ("execute", "step", "sync") and t0 <= e["ts"] <= t1]
    tot = sum(e["dur"] for e in ks) / 1e3
    bn = sum(e["dur"] for e in ks if fam(e["name"])) / 1e3
    print("%s: step %.0f ms, batch-norm family %.0f ms (%.1f%% of kernel time)" % (sys.argv[2], r["dur"] / 1e3, bn, 100 * bn / tot))
PY
    done
done
rm -f "$tmp.json" "$tmp.log"
