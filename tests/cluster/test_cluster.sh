#!/bin/sh
# Two test hosts (network namespaces, tests/cluster/cluster.sh), MPI over
# TCP between them:
#   1. 2 hosts x 1 rank train ResNet-20 for 20 steps exactly as 2 ranks on
#      one host do (shared memory): the same losses and the same checkpoint,
#      byte for byte (two ranks add their gradients in the same order
#      whatever the transport), with the gradients seen crossing the link;
#      tests/test_dist_train runs across the two hosts too.
#   2. a rank's host link cut (ip link set down) mid-training ends the job
#      non-zero within 60 s, with a message naming the lost rank; the last
#      checkpoint (--save-every) loads.
# usage: test_cluster.sh LAZYTENSOR [TEST_DIST_TRAIN]. Exits 77 (CTest's
# skip), saying why, without root or network namespaces or mpirun.
set -u
cli=${1:?usage: test_cluster.sh LAZYTENSOR [TEST_DIST_TRAIN]}
dist_train=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LT_ADAPT_THREADS=0
# Thread count and data fixed: a host alone would otherwise take all its cores.
train="$cli train --model resnet20 --data fake --batch-size 32 --threads 1 --test-size 0 --log-every 5"

# ---- inside a cluster (cluster.sh runs this script again with a mode) ----
case "${3:-}" in
same) # $4: the work directory
    ns2=${LT_CLUSTER_NS#* }
    tx0=$(ip netns exec "$ns2" cat /sys/class/net/eth0/statistics/tx_bytes)
    $LT_CLUSTER_MPIRUN -np 2 -x LT_ADAPT_THREADS $train --steps 20 --save "$4/two.safetensors" --report json \
        >"$4/two.json" 2>"$4/two.err" || { echo "2 hosts: the run failed:"; tail -20 "$4/two.err"; exit 1; }
    tx1=$(ip netns exec "$ns2" cat /sys/class/net/eth0/statistics/tx_bytes)
    echo $((tx1 - tx0)) >"$4/two.tx"
    [ -z "$dist_train" ] && exit 0
    $LT_CLUSTER_MPIRUN -np 2 -x LT_ADAPT_THREADS -x ASAN_OPTIONS "$dist_train" >"$4/dist_train.out" 2>&1
    echo $? >"$4/dist_train.rc"
    exit 0 ;;
cut) # $4: the work directory
    ns2=${LT_CLUSTER_NS#* }
    $LT_CLUSTER_MPIRUN -np 2 -x LT_ADAPT_THREADS -x LT_DIST_TIMEOUT=8 $train --steps 100000 \
        --save "$4/cut.safetensors" --save-every 5 >"$4/cut.out" 2>&1 &
    job=$!
    i=0 # the first checkpoint, then a few steps more
    while [ ! -f "$4/cut.safetensors" ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
    sleep 2
    t0=$(date +%s)
    ip -n "$ns2" link set eth0 down
    wait $job
    echo "$? $(($(date +%s) - t0))" >"$4/cut.rc"
    exit 0 ;;
esac

# ---- the test ----
work=$(mktemp -d "${TMPDIR:-/tmp}/lt-test-cluster.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
passed=0 failed=0
ok() { echo "  ok: $*"; passed=$((passed + 1)); }
bad() { echo "  FAIL: $*"; failed=$((failed + 1)); }

sh "$here/cluster.sh" --hosts 2 -- sh "$0" "$cli" "$dist_train" same "$work"
rc=$?
[ $rc -eq 77 ] && exit 77
if [ $rc -ne 0 ]; then
    bad "2 hosts x 1 rank: exit status $rc"
else
    mpirun --oversubscribe -np 2 -x LT_ADAPT_THREADS $train --steps 20 --save "$work/one.safetensors" --report json \
        >"$work/one.json" 2>"$work/one.err" || { tail -20 "$work/one.err"; bad "1 host x 2 ranks: the run failed"; }
    l1=$(sed 's/.*"losses": \[\(.*\)\].*/\1/' "$work/one.json") l2=$(sed 's/.*"losses": \[\(.*\)\].*/\1/' "$work/two.json")
    if [ -n "$l1" ] && [ "$l1" = "$l2" ]; then ok "2 hosts x 1 rank: the 20 losses of 1 host x 2 ranks ($(echo "$l1" | cut -c1-40)...)"
    else bad "losses differ: 1 host [$l1], 2 hosts [$l2]"; fi
    if cmp -s "$work/one.safetensors" "$work/two.safetensors"; then ok "the checkpoints are the same bytes"
    else bad "the checkpoints differ: $(cmp "$work/one.safetensors" "$work/two.safetensors" 2>&1)"; fi
    # what crossed host 2's link: at least the gradients, as the report estimates them
    wire=$(sed 's/.*"bytes_on_wire_per_step": \([0-9]*\).*/\1/' "$work/two.json")
    tx=$(cat "$work/two.tx")
    if [ "$tx" -ge $((wire * 20)) ]; then ok "host 2 sent $tx bytes on its link (report: $wire per step x 20)"
    else bad "host 2 sent $tx bytes on its link, less than the report's $wire per step x 20"; fi
    if [ -n "$dist_train" ]; then
        if [ "$(cat "$work/dist_train.rc")" = 0 ]; then ok "test_dist_train across 2 hosts: $(tail -1 "$work/dist_train.out")"
        else tail -30 "$work/dist_train.out"; bad "test_dist_train across 2 hosts failed"; fi
    fi
fi

sh "$here/cluster.sh" --hosts 2 -- sh "$0" "$cli" "$dist_train" cut "$work"
read -r rc secs <"$work/cut.rc" || { rc=missing secs=0; }
lost=$(grep -m1 "rank 1 .*lost" "$work/cut.out")
if [ "$rc" != 0 ] && [ "$rc" != missing ] && [ "$secs" -le 60 ]; then ok "link cut: the job ended with status $rc after $secs s"
else tail -20 "$work/cut.out"; bad "link cut: exit status $rc after $secs s (expected non-zero within 60 s)"; fi
if [ -n "$lost" ]; then ok "the message names the lost rank: $lost"
else tail -20 "$work/cut.out"; bad "no message naming rank 1 as lost"; fi
if $cli eval --model resnet20 --data fake --test-size 64 --resume "$work/cut.safetensors" >"$work/eval.out" 2>&1; then
    ok "the last checkpoint loads: $(grep -m1 -i "accuracy" "$work/eval.out")"
else cat "$work/eval.out"; bad "the last checkpoint does not load"; fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
