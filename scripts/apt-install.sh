#!/usr/bin/env bash
# apt-install.sh — install Debian packages, waiting for apt's locks instead of failing.
#
# Usage: scripts/apt-install.sh <package>...
#
# Another apt-get on the machine (unattended-upgrades, a second checkout's `make test`) holds
# /var/lib/dpkg/lock-frontend or /var/lib/apt/lists/lock; a bare apt-get then fails at once with
# "Could not get lock". `apt-get install` can wait (DPkg::Lock::Timeout); `apt-get update` cannot
# in apt 2.6, so it is retried. Both give up after about 10 minutes with apt's own error.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 <package>..." >&2; exit 2; }
sudo=$([ "$(id -u)" = 0 ] || echo sudo)
export DEBIAN_FRONTEND=noninteractive

for try in $(seq 1 60); do
  if out=$($sudo apt-get update -qq 2>&1); then break; fi
  if [ "$try" = 60 ] || ! grep -q 'Could not get lock' <<<"$out"; then printf '%s\n' "$out" >&2; exit 1; fi
  [ "$try" = 1 ] && echo "apt-install: another apt-get holds the package lists; waiting" >&2
  sleep 10
done
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@"
