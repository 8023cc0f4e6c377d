#!/usr/bin/env bash
# cluster-down.sh — stop the cluster of scripts/cluster-up.sh and leave
# nothing of it on the host.
#
# Usage:
#   scripts/cluster-down.sh          # stop everything and remove the cluster's
#                                    # objects (etcd's data), as `kind delete
#                                    # cluster` does; keep the credentials and logs
#   scripts/cluster-down.sh --keep-objects
#                                    # keep etcd's data too: the next cluster-up
#                                    # brings back this cluster's objects
#   scripts/cluster-down.sh --wipe   # remove the whole state dir
#
# Stops, by pid: the recorded components (kubelet first, so it restarts no
# container), then every process left in the cluster's network or mount
# namespace or in the kubelet's pod cgroups (containers, containerd's shims),
# SIGTERM then SIGKILL after BOXAUTH_CLUSTER_STOP_TIMEOUT seconds (20). Then
# removes the kubepods cgroups, unmounts the namespaces (which frees them, and
# with them node0, cni0, the pods' network namespaces, the nft table and
# every mount made inside), and removes the pod state containerd and the
# kubelet keep between runs, and etcd's data: the next cluster-up starts an
# empty cluster (with --keep-objects the API objects stay, and the kubelet runs
# their pods again on the next start). Exits 0 when nothing runs.
#
# Environment: as for cluster-up.sh (scripts/cluster-lib.sh).
set -euo pipefail

LOG_NAME=cluster-down
# shellcheck source=scripts/cluster-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster-lib.sh"
trap 'log "error: line $LINENO: \`$BASH_COMMAND\` failed (exit $?)"' ERR
STOP_TIMEOUT=${BOXAUTH_CLUSTER_STOP_TIMEOUT:-20}
[[ $STOP_TIMEOUT =~ ^[0-9]+$ ]] || die "BOXAUTH_CLUSTER_STOP_TIMEOUT is not a number"
WIPE=0
KEEP_OBJECTS=0
for arg in "$@"; do
  case $arg in
    --wipe) WIPE=1 ;;
    --keep-objects) KEEP_OBJECTS=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) die "unknown argument: $arg (see --help)" ;;
  esac
done

if [[ ! -d $DIR ]]; then
  log "nothing to stop ($DIR does not exist)"
  exit 0
fi
exec 9>"$DIR/.lock"
flock -w 300 9 || die "another cluster-up/cluster-down holds $DIR/.lock"

# stop NAME PIDS...: SIGTERM them all, SIGKILL what is left after STOP_TIMEOUT.
stop() {
  local name=$1 pid deadline left
  shift
  (($#)) || return 0
  log "stopping $name (pid $*)"
  for pid; do kill -TERM "$pid" 2>/dev/null || true; done
  deadline=$((SECONDS + STOP_TIMEOUT))
  while :; do
    left=()
    for pid; do if alive "$pid"; then left+=("$pid"); fi; done
    ((${#left[@]})) || return 0
    ((SECONDS < deadline)) || break
    sleep 0.1
  done
  log "$name: pid ${left[*]} did not stop in $STOP_TIMEOUT s; SIGKILL"
  for pid in "${left[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${left[@]}"; do while alive "$pid"; do sleep 0.1; done; done
}

# The kubelet first (it would restart containers), then the containers (in the
# pod cgroups), then containerd and its shims, then the rest.
for name in kubelet kube-proxy coredns kube-scheduler kube-controller-manager; do
  pid=$(pid_of "$name")
  if [[ -n $pid ]]; then stop "$name" "$pid"; fi
  rm -f "$DIR/$name.pid"
done
# (Each hierarchy lists the same processes.)
mapfile -t containers < <(for d in $(kubepods_cgroups); do cat "$d/cgroup.procs"; done | sort -un)
stop containers "${containers[@]}"
for name in containerd kube-apiserver etcd nsforward; do
  pid=$(pid_of "$name")
  if [[ -n $pid ]]; then stop "$name" "$pid"; fi
  rm -f "$DIR/$name.pid"
done
mapfile -t rest < <(ns_pids)
stop "what was left in the namespaces" "${rest[@]}"

# cgroupfs: the kubelet's kubepods tree (and the pods' below it), every
# hierarchy. rmdir only: a cgroup with a process in it stays and is reported.
mapfile -t groups < <(kubepods_cgroups)
if ((${#groups[@]})); then
  log "removing ${#groups[@]} kubepods cgroup(s)"
  for d in "${groups[@]}"; do rmdir "$d" 2>/dev/null || log "cannot remove cgroup $d"; done
fi

# Unmounting the namespace files frees the namespaces (no process is left in
# them): their interfaces, routes, nft table and mounts go with them.
for m in "$NET_NS" "$MNT_NS" "$NS"; do
  if mountpoint -q "$m" 2>/dev/null; then umount "$m" && log "unmounted $m"; fi
done
for m in "$NET_NS" "$MNT_NS" "$NS"; do
  if mountpoint -q "$m" 2>/dev/null; then die "$m is still mounted (see above)"; fi
done
rm -f "$NET_NS" "$MNT_NS"

# Pod state that would be stale on the next start: containerd's (its images
# too: cluster-up.sh imports them again in seconds), the kubelet's pods and
# checkpoints, CNI addresses, the /var/lib overlay.
rm -rf "$DIR/containerd" "$DIR/kubelet" "$DIR/cni/ipam" "$DIR/varlib"
# The API objects: kept, the next cluster-up would bring them back (a `helm
# install` then fails on "namespaces boxauth-system already exists").
if [[ $KEEP_OBJECTS == 0 ]]; then rm -rf "$DIR/etcd"; fi

if [[ $WIPE == 1 ]]; then
  case $DIR in
    / | "$HOME" | "$ROOT") die "refusing to wipe $DIR" ;;
  esac
  exec 9>&-
  rm -rf "$DIR"
  log "cluster down; removed $DIR"
else
  log "cluster down"
fi
