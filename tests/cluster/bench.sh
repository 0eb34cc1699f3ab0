#!/bin/sh
# The "Several machines" table of docs/benchmarks.md: 2 test hosts x 1 rank
# (tests/cluster/cluster.sh) train on fake data over links shaped to each
# rate, with and without --grad-compress bf16, and one markdown row each:
# images/s, step time, the time the steps waited on communication, the
# bytes per step the report estimates and those host 2's link counted,
# and the ring all-reduce bound 2(N-1)/N x S / B of docs/distributed.md.
#   bench.sh LAZYTENSOR [MODEL [IMAGE_SIZE [STEPS [RATES...]]]]
# defaults: resnet18 64 10, rates 10gbit 2500mbit 1gbit (a rate "unshaped":
# the veth links as they are, the baseline of waiting on the slower rank
# rather than on the link); batch 32 per rank,
# one thread per rank (set BATCH, THREADS, DELAY to change; DELAY needs netem).
set -u
cli=${1:?usage: bench.sh LAZYTENSOR [MODEL [IMAGE_SIZE [STEPS [RATES...]]]]}
here=$(cd "$(dirname "$0")" && pwd)
if [ "${2:-}" = --inner ]; then # in the cluster: $3 model, $4 size, $5 steps, $6 compress, $7 out
    ns2=${LT_CLUSTER_NS#* }
    tx0=$(ip netns exec "$ns2" cat /sys/class/net/eth0/statistics/tx_bytes)
    $LT_CLUSTER_MPIRUN -np 2 -x LT_ADAPT_THREADS=0 "$cli" train --model "$3" --data fake --image-size "$4" \
        --batch-size "${BATCH:-32}" --threads "${THREADS:-1}" --test-size 0 --steps "$5" --grad-compress "$6" \
        --report json >"$7.json" 2>"$7.err" || { tail -5 "$7.err" >&2; exit 1; }
    tx1=$(ip netns exec "$ns2" cat /sys/class/net/eth0/statistics/tx_bytes)
    echo $((tx1 - tx0)) >"$7.tx"
    exit 0
fi
model=${2:-resnet18} size=${3:-64} steps=${4:-10}
shift $(($# < 4 ? $# : 4))
rates=${*:-10gbit 2500mbit 1gbit}
work=$(mktemp -d "${TMPDIR:-/tmp}/lt-bench-cluster.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
field() { sed "s/.*\"$1\": \([-0-9.e+]*\).*/\1/" "$2"; }
echo "| link | gradients | img/s | ms/step | waited on comm, ms/step | share of step | bytes/step (report) | bytes/step (link) | ring bound, ms |"
echo "|---|---|---|---|---|---|---|---|---|"
for rate in $rates; do
    for comp in none bf16; do
        out="$work/$rate-$comp"
        shaping="--rate $rate"
        [ "$rate" = unshaped ] && shaping=
        sh "$here/cluster.sh" --hosts 2 $shaping ${DELAY:+--delay "$DELAY"} -- \
            sh "$0" "$cli" --inner "$model" "$size" "$steps" "$comp" "$out" || { echo "| $rate | $comp | failed |"; continue; }
        ips=$(field images_per_sec "$out.json") exp=$(field comm_exposed_ms_per_step "$out.json")
        wire=$(field bytes_on_wire_per_step "$out.json") tx=$(cat "$out.tx")
        bps=$(echo "$rate" | sed 's/unshaped/0/; s/gbit/ * 1000000000/; s/mbit/ * 1000000/' | bc)
        # the ring bound over this link: bytes/step as the report counts them, at the link's rate
        awk -v r="$rate" -v c="$comp" -v ips="$ips" -v expo="$exp" -v wire="$wire" -v tx="$tx" -v steps="$steps" \
            -v bps="$bps" -v batch="${BATCH:-32}" 'BEGIN {
            ms = 2 * batch / ips * 1000
            printf "| %s | %s | %.1f | %.0f | %.0f | %.0f%% | %.1f MB | %.1f MB | %.0f |\n", r, c == "bf16" ? "bf16" : "fp32",
                ips, ms, expo, 100 * expo / ms, wire / 1e6, tx / steps / 1e6, (bps > 0 ? wire * 8 / bps * 1000 : 0) }'
    done
done
