#!/bin/sh
# Several test hosts on this machine, for multi-host MPI runs: each host is
# a network namespace with one veth link to a bridge in a switch namespace.
# Addresses exist only inside those namespaces (10.231.0.0/24 by default),
# with no route out; nothing is added to the machine's own namespace and
# /etc/hosts is not touched (hosts are named by address).
#
#   cluster.sh [--hosts N] [--rate RATE] [--delay TIME] [--subnet A.B.C] -- COMMAND...
#
# makes the hosts, optionally shapes every link (tc tbf at RATE, e.g. 1gbit,
# on both directions; netem DELAY each way where the kernel has netem), runs
# COMMAND on this machine with the variables below, and removes everything
# it made when COMMAND ends, fails, or the script is interrupted (INT, TERM,
# HUP): the processes left in the namespaces, then the namespaces, whose
# deletion takes their links with them. Its exit status is COMMAND's.
#
#   LT_CLUSTER_HOSTS   the hosts' addresses, comma-separated (mpirun --host)
#   LT_CLUSTER_NS      their namespaces, space-separated, in the same order
#   LT_CLUSTER_RUN     prefix that runs a command on the first host: mpirun
#                      starts there and reaches the others through the agent
#   LT_CLUSTER_MPIRUN  `LT_CLUSTER_RUN mpirun` with the options that keep
#                      OpenMPI on TCP inside the subnet (shared memory off,
#                      the launch agent tests/cluster/agent.sh); add -np etc.
#   LT_CLUSTER_MAP     file of "address namespace" lines (read by the agent)
#
# Needs root (ip netns), iproute2 and OpenMPI; exits 77 (CTest's skip) with
# a line saying why when the machine does not allow namespaces.
set -u
hosts=2 rate= delay= subnet=10.231.0
while [ $# -gt 0 ]; do
    case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --subnet) subnet=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "cluster.sh: unknown option '$1' (usage: cluster.sh [--hosts N] [--rate RATE] [--delay TIME] [--subnet A.B.C] -- COMMAND...)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "cluster.sh: no COMMAND after --" >&2; exit 2; }
case "$hosts" in '' | *[!0-9]*) echo "cluster.sh: --hosts '$hosts' is not a number" >&2; exit 2 ;; esac
[ "$hosts" -ge 1 ] && [ "$hosts" -le 200 ] || { echo "cluster.sh: --hosts $hosts: expected 1 to 200" >&2; exit 2; }

skip() { echo "cluster.sh: SKIPPED: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to make network namespaces (ip netns)"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (apt-get install iproute2)"
command -v mpirun >/dev/null 2>&1 || skip "no mpirun (apt-get install openmpi-bin)"

here=$(cd "$(dirname "$0")" && pwd)
tag="lt$$" # namespaces of this run: ${tag}sw (the switch) and ${tag}h1..N
dir=$(mktemp -d "${TMPDIR:-/tmp}/lt-cluster.XXXXXX") || exit 1
made="" # namespaces made so far, removed in reverse by cleanup

cleanup() {
    trap '' INT TERM HUP
    [ -n "${child:-}" ] && kill -TERM "$child" 2>/dev/null # COMMAND itself, when interrupted
    for ns in $made; do # processes first: a namespace with processes in it outlives `ip netns del`
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
    done
    for ns in $made; do
        i=0
        while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    rm -rf "$dir"
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP

# mk NS: a namespace with its loopback up, remembered for cleanup.
mk() {
    ip netns add "$1" 2>"$dir/err" || { cat "$dir/err" >&2; cleanup; skip "this machine does not allow network namespaces (ip netns add failed)"; }
    made="$1 $made"
    ip -n "$1" link set lo up
}

# shape NS DEV: the link's egress from NS at $rate, delayed $delay.
shape() {
    if [ -n "$delay" ] && [ "$netem" = 1 ]; then
        ip netns exec "$1" tc qdisc add dev "$2" root netem delay "$delay" ${rate:+rate "$rate"} limit 100000
    elif [ -n "$rate" ]; then
        # burst: a 64 KiB segment (veth passes GSO segments whole) and then some
        ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst 256kb latency 100ms
    fi
}

set -e
mk "${tag}sw"
ip -n "${tag}sw" link add br0 type bridge
ip -n "${tag}sw" link set br0 up
netem=0
if [ -n "$delay" ]; then
    ip -n "${tag}sw" link add probe0 type dummy
    if ip netns exec "${tag}sw" tc qdisc add dev probe0 root netem delay 1ms 2>/dev/null; then netem=1
    else echo "cluster.sh: this kernel has no netem (CONFIG_NET_SCH_NETEM): --delay $delay is not applied${rate:+, only --rate $rate}" >&2; fi
    ip -n "${tag}sw" link del probe0
fi
: >"$dir/map"
addrs="" nss=""
i=1
while [ $i -le "$hosts" ]; do
    ns="${tag}h$i" addr="$subnet.$i"
    mk "$ns"
    # the pair is made in the switch namespace, one end then moved into the host
    ip -n "${tag}sw" link add "h$i" type veth peer name eth0 netns "$ns"
    ip -n "${tag}sw" link set "h$i" master br0 up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    # TCP gives up on unacknowledged data after ~25 s of retransmissions
    # (0.2 s doubling 6 times) instead of ~15 minutes: a cut link then ends
    # mpirun's wait for the lost host's daemon (a per-namespace setting)
    ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_retries2=6
    shape "$ns" eth0
    shape "${tag}sw" "h$i"
    echo "$addr $ns" >>"$dir/map"
    addrs="${addrs:+$addrs,}$addr" nss="${nss:+$nss }$ns"
    i=$((i + 1))
done
set +e

export LT_CLUSTER_HOSTS="$addrs" LT_CLUSTER_NS="$nss" LT_CLUSTER_MAP="$dir/map"
export LT_CLUSTER_RUN="ip netns exec ${tag}h1"
# TCP only, inside the subnet, both for MPI's messages (btl) and for the
# launcher's own (oob); the agent enters a host's namespace instead of ssh.
# A host whose link is cut sends no reset: mpirun notices that its daemon
# is gone only through TCP, by keepalive on an idle connection (after 300 +
# 9 x 20 s by default; here 15 + 3 x 5 s) or by retransmissions giving up
# (tcp_retries2 above): later than the ranks' own check that names the lost
# rank (LT_DIST_TIMEOUT, src/dist/watch.c), soon enough to end the job.
export LT_CLUSTER_MPIRUN="$LT_CLUSTER_RUN mpirun --host $addrs --mca plm_rsh_agent $here/agent.sh \
--mca btl tcp,self --mca btl_tcp_if_include $subnet.0/24 --mca oob_tcp_if_include $subnet.0/24 \
--mca oob_tcp_keepalive_time 15 --mca oob_tcp_keepalive_intvl 5 --mca oob_tcp_keepalive_probes 3"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$@" &
child=$!
wait $child
rc=$?
child=
cleanup
exit $rc
