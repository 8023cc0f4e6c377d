#!/usr/bin/env bash
# cluster-exec.sh — run a command inside the network namespace of the cluster
# of scripts/cluster-up.sh, where pod and Service addresses, the node address
# and the API server (https://<node ip>:6443) are reachable. The host's files
# stay as they are (only the network namespace is entered).
#
# Usage: scripts/cluster-exec.sh CMD [ARGS...]
#   e.g. scripts/cluster-exec.sh kubectl --kubeconfig .boxauth/cluster/kubeconfig.netns get pods -A
#
# KUBECONFIG is set to that kubeconfig for CMD unless already set.
# Environment: as for cluster-up.sh (scripts/cluster-lib.sh).
set -euo pipefail

LOG_NAME=cluster-exec
# shellcheck source=scripts/cluster-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster-lib.sh"
(($#)) || die "usage: $0 CMD [ARGS...]"
ns_up || die "no cluster runs in $DIR (make cluster-up)"
export KUBECONFIG=${KUBECONFIG:-$DIR/kubeconfig.netns}
exec nsenter --net="$NET_NS" -- "$@"
