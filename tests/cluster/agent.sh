#!/bin/sh
# OpenMPI's launch agent for tests/cluster/cluster.sh (mpirun --mca
# plm_rsh_agent): called as ssh would be, `agent.sh [ssh options] HOST
# COMMAND...`, it runs COMMAND (OpenMPI's daemon) in HOST's namespace,
# looked up in $LT_CLUSTER_MAP, with the caller's environment.
while [ $# -gt 0 ]; do
    case "$1" in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;; # ssh options that take a value
    -*) shift ;;
    *) break ;;
    esac
done
host=$1
shift
ns=$(awk -v h="$host" '$1 == h { print $2 }' "${LT_CLUSTER_MAP:?agent.sh: LT_CLUSTER_MAP is not set}")
[ -n "$ns" ] || { echo "agent.sh: host '$host' is not in $LT_CLUSTER_MAP" >&2; exit 255; }
exec ip netns exec "$ns" /bin/sh -c "$*"
