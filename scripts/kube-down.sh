#!/usr/bin/env bash
# kube-down.sh — stop the local test cluster started by scripts/kube-up.sh.
#
# Usage:
#   scripts/kube-down.sh          # stop kube-apiserver, then etcd; keep the state
#   scripts/kube-down.sh --wipe   # also remove the state dir (etcd data, keys, ...)
#
# Stops the processes by the pids kube-up.sh recorded in the state dir
# (SIGTERM, then SIGKILL after BOXAUTH_KUBE_STOP_TIMEOUT seconds, default 20).
# A pid file whose process is gone, or is not that component of this state
# dir, is just removed. Exits 0 when nothing runs.
#
# Environment: BOXAUTH_KUBE_DIR (default <repo>/.boxauth/kube), as for kube-up.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${BOXAUTH_KUBE_DIR:-$ROOT/.boxauth/kube}
STOP_TIMEOUT=${BOXAUTH_KUBE_STOP_TIMEOUT:-20}
WIPE=0

log() { printf 'kube-down: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
trap 'log "error: line $LINENO: \`$BASH_COMMAND\` failed (exit $?)"' ERR

for arg in "$@"; do
  case $arg in
    --wipe) WIPE=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) die "unknown argument: $arg (see --help)" ;;
  esac
done
[[ $STOP_TIMEOUT =~ ^[0-9]+$ ]] || die "BOXAUTH_KUBE_STOP_TIMEOUT is not a number"

if [[ ! -d $DIR ]]; then
  log "nothing to stop ($DIR does not exist)"
  exit 0
fi
DIR=$(cd "$DIR" && pwd)

exec 9>"$DIR/.lock"
flock -w 300 9 || die "another kube-up/kube-down holds $DIR/.lock"

# alive, pid_of (as kube-up.sh)
# shellcheck source=scripts/kube-lib.sh
source "$ROOT/scripts/kube-lib.sh"

# stragglers NAME: pids of any NAME process whose command line points into
# this state dir (e.g. one whose pid file was lost).
stragglers() {
  local f pid cmd
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    cmd=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
    if [[ $cmd == *"/$1 "*"$DIR/"* ]] && alive "$pid"; then echo "$pid"; fi
  done
}

# stop NAME PID: SIGTERM, then SIGKILL after STOP_TIMEOUT seconds.
stop() {
  local name=$1 pid=$2 deadline
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + STOP_TIMEOUT))
  while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  if alive "$pid"; then
    log "$name did not stop in $STOP_TIMEOUT s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    while alive "$pid"; do sleep 0.1; done
  fi
  stopped=$((stopped + 1))
}

stopped=0
for name in kube-apiserver etcd; do
  pid=$(pid_of "$name")
  if [[ -n $pid ]]; then stop "$name" "$pid"; fi
  rm -f "$DIR/$name.pid"
  for pid in $(stragglers "$name"); do stop "$name" "$pid"; done
done
((stopped)) || log "nothing was running in $DIR"

if [[ $WIPE == 1 ]]; then
  case $DIR in
    / | "$HOME" | "$ROOT") die "refusing to wipe $DIR" ;;
  esac
  exec 9>&-
  rm -rf "$DIR"
  log "removed $DIR"
fi
