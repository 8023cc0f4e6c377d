# cluster-lib.sh — what cluster-up.sh, cluster-down.sh and cluster-check.sh
# share: the state directory, the namespaces, the addresses, and how a
# process of the cluster is recognised. Sourced, not run. The caller sets
# LOG_NAME before sourcing.
#
# Environment (all optional):
#   BOXAUTH_CLUSTER_DIR    state dir (default <repo>/.boxauth/cluster)
#   BOXAUTH_CLUSTER_PORT   host loopback port published to the API server (6444)
#   BOXAUTH_CLUSTER_NET    first two octets of the cluster's addresses (10.213):
#                          node <net>.0.1/24 on node0, pods <net>.1.0/24 on the
#                          bridge cni0, Services <net>.2.0/24, DNS <net>.2.10.
#                          They exist only inside the cluster's network namespace.
#   BOXAUTH_KUBE_CACHE     binary cache (see kube-build.sh)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${BOXAUTH_CLUSTER_DIR:-$ROOT/.boxauth/cluster}
PORT=${BOXAUTH_CLUSTER_PORT:-6444}
NET=${BOXAUTH_CLUSTER_NET:-10.213}
CACHE=${BOXAUTH_KUBE_CACHE:-$HOME/.cache/boxauth/kube}
BIN=$CACHE/bin
KUBECTL=$BIN/kubectl

NODE_NAME=boxauth-node
NODE_IP=$NET.0.1
POD_CIDR=$NET.1.0/24
SERVICE_CIDR=$NET.2.0/24
DNS_IP=$NET.2.10
API_PORT=6443 # inside the namespace: nothing of the host's ports is used

log() { printf '%s: %s\n' "$LOG_NAME" "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $PORT =~ ^[0-9]+$ ]] || die "BOXAUTH_CLUSTER_PORT is not a number: $PORT"
[[ $NET =~ ^[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "BOXAUTH_CLUSTER_NET is not two octets: $NET"

# Absolute, as the processes' command lines name it (pid_of), existing or not.
DIR=$(realpath -m "$DIR")
# The namespaces live as bind mounts of their /proc/<pid>/ns files (what
# `unshare --net=<file>` makes), so no process has to hold them and nothing
# goes to the host's /run/netns.
NS=$DIR/ns
NET_NS=$NS/net
MNT_NS=$NS/mnt

# ns_up: whether the cluster's namespaces exist.
ns_up() { mountpoint -q "$NET_NS" 2>/dev/null && mountpoint -q "$MNT_NS" 2>/dev/null; }

# in_ns CMD...: run CMD inside the cluster's network and mount namespaces.
in_ns() { nsenter --mount="$MNT_NS" --net="$NET_NS" -- "$@"; }

# alive, pid_of
# shellcheck source=scripts/kube-lib.sh
source "$ROOT/scripts/kube-lib.sh"

# ns_pids: every process inside the cluster's network or mount namespace
# (components, containerd's shims, anything a test ran there) and every
# process in the kubelet's pod cgroups (the containers, which have
# namespaces of their own). Compared by namespace inode, never by name.
ns_pids() {
  local net mnt f pid
  net= mnt=
  # Only a mounted file is a namespace: a plain file's inode matches none.
  if mountpoint -q "$NET_NS" 2>/dev/null; then net=$(stat -L -c %i "$NET_NS"); fi
  if mountpoint -q "$MNT_NS" 2>/dev/null; then mnt=$(stat -L -c %i "$MNT_NS"); fi
  for f in /proc/[0-9]*; do
    pid=${f#/proc/}
    [[ $pid != "$$" && $pid != "$BASHPID" ]] || continue
    if [[ -n $net && $(stat -L -c %i "$f/ns/net" 2>/dev/null) == "$net" ]] ||
      [[ -n $mnt && $(stat -L -c %i "$f/ns/mnt" 2>/dev/null) == "$mnt" ]] ||
      grep -q ':/kubepods' "$f/cgroup" 2>/dev/null; then
      echo "$pid"
    fi
  done
}

# kubepods_cgroups: the kubelet's cgroup directories (cgroupfs driver, every
# hierarchy), deepest first.
kubepods_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    if [[ -d $d ]]; then find "$d" -depth -type d; fi
  done
}
