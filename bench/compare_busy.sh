#!/bin/sh
# A busy core: how much slower a training step gets when another process
# keeps one core busy (a shell loop pinned to core 1 with taskset), for
# lazytensor and for PyTorch eager, measured the same way: each framework's
# median step over the second half of STEPS steps (the policy of lazytensor
# and PyTorch's warm-up settle in the first half), quiet run then busy run,
# alternating, ROUNDS times; the factor is busy / quiet. 2 threads both
# (lazytensor: all cores; PyTorch: NT=2).
#   sh bench/compare_busy.sh            ResNet-20, batch 32, 1x28x28 fake data
#   MODEL=resnet50 sh bench/compare_busy.sh   batch 32, 224x224 (minutes)
#   ROUNDS=3 STEPS=40 BATCH=32 ...; LT_ADAPT_THREADS=0 for lazytensor without
#   its thread policy
# Needs build/lazytensor (make build) and Debian's PyTorch under
# /usr/bin/python3. Prints each run and the median factors.
here=$(cd "$(dirname "$0")/.." && pwd)
MODEL=${MODEL:-resnet20}
ROUNDS=${ROUNDS:-3}
BATCH=${BATCH:-32}
if [ "$MODEL" = resnet20 ]; then SIZE=${SIZE:-28}; STEPS=${STEPS:-40}; else SIZE=${SIZE:-224}; STEPS=${STEPS:-12}; fi
fail() { echo "compare_busy: $*" >&2; exit 1; }
[ -x "$here/build/lazytensor" ] || fail "build/lazytensor is missing (make build)"
/usr/bin/python3 -c "import torch, torchvision" 2>/dev/null || fail "PyTorch is missing under /usr/bin/python3"
command -v taskset >/dev/null || fail "taskset is missing (util-linux)"
[ "$(nproc)" -ge 2 ] || fail "needs 2 cores or more"

median() { sort -n | awk '{ s[NR] = $1 } END { if (NR) printf "%.2f", NR % 2 ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2 }'; }
# The median of the second half of a list of step times, one per line.
half_median() { awk '{ t[NR] = $1 } END { for (i = int(NR / 2) + 1; i <= NR; i++) print t[i] }' | median; }
# Step times of lazytensor: trace + execute of each step (progress lines).
ours() {
    "$here/build/lazytensor" train --data fake --model "$MODEL" --batch-size "$BATCH" --image-size "$SIZE" \
        --steps "$STEPS" --test-size 0 --log-every 1 2>&1 >/dev/null |
        awk '/^step [0-9]/ { for (i = 1; i < NF; i++) { if ($i == "trace_ms") t = $(i + 1); if ($i == "execute_ms") e = $(i + 1) }
            print t + e }' | half_median
}
# Step times of PyTorch eager (train_bench.py's step_ms line).
theirs() {
    STEPS=$STEPS NT=2 /usr/bin/python3 "$here/bench/pytorch/train_bench.py" "$MODEL" "$BATCH" "$SIZE" eager |
        awk '/^step_ms/ { for (i = 2; i <= NF; i++) print $i }' | half_median
}
busy_pid=
busy_on() { taskset -c 1 sh -c 'while :; do :; done' & busy_pid=$!; sleep 1; }
busy_off() { kill "$busy_pid" 2>/dev/null; wait "$busy_pid" 2>/dev/null; busy_pid=; }
trap 'busy_off; exit 130' INT TERM

echo "== $MODEL batch $BATCH ${SIZE}x$SIZE, $STEPS steps (median of the last $((STEPS - STEPS / 2))), 2 threads; load now: $(cut -d' ' -f1-3 /proc/loadavg)"
fo=; ft=
for r in $(seq "$ROUNDS"); do
    q=$(ours); busy_on; b=$(ours); busy_off
    [ -n "$q" ] && [ -n "$b" ] || fail "lazytensor train failed"
    f=$(echo "$b $q" | awk '{ printf "%.2f", $1 / $2 }'); fo="$fo $f"
    echo "round $r lazytensor: quiet $q ms, busy $b ms, factor $f"
    q=$(theirs); busy_on; b=$(theirs); busy_off
    [ -n "$q" ] && [ -n "$b" ] || fail "PyTorch train_bench.py failed"
    f=$(echo "$b $q" | awk '{ printf "%.2f", $1 / $2 }'); ft="$ft $f"
    echo "round $r PyTorch:    quiet $q ms, busy $b ms, factor $f"
done
echo "median factor (busy / quiet): lazytensor $(echo $fo | tr ' ' '\n' | median), PyTorch $(echo $ft | tr ' ' '\n' | median)"
