#!/usr/bin/env bash
# cluster-check.sh — the cluster of scripts/cluster-up.sh end to end, and the
# host unchanged afterwards.
#
# Usage: scripts/cluster-check.sh      (make cluster-check; needs root)
#
# 1. Records the host: interfaces, addresses and routes, the forwarding and
#    kernel sysctls the kubelet and kube-proxy could write, the nft ruleset,
#    mounts, cgroup directories, the paths containerd and the kubelet
#    hard-code, and the processes of the cluster (none).
# 2. cluster-up.sh, with a state dir and host port of its own
#    (<repo>/.boxauth/cluster-check, 6445), so a `make cluster-up` cluster's
#    state is not touched (only one cluster can run at a time: kubepods).
# 3. The node is Ready; a Pod of the probe image runs with an address on the
#    pod bridge cni0; a Service in front of it answers through kube-proxy from
#    the cluster's network namespace; from another Pod, the Service's name
#    resolves through CoreDNS (kube-dns) to its ClusterIP and answers, and so
#    does kubernetes.default; that Pod reaches the API server with its
#    ServiceAccount's projected token. kubectl (exec, logs, port-forward)
#    runs on the host through the forwarded loopback port.
# 4. cluster-down.sh --wipe (without --wipe when a check failed, so the logs
#    stay), then the host is recorded again and must be as before (a diff is
#    printed otherwise). The check starts from an empty state dir.
# Prints how long each step took. Exit 0 only when all of it held.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BOXAUTH_CLUSTER_DIR=${BOXAUTH_CLUSTER_DIR:-$ROOT/.boxauth/cluster-check}
export BOXAUTH_CLUSTER_PORT=${BOXAUTH_CLUSTER_PORT:-6445}
LOG_NAME=cluster-check
# shellcheck source=scripts/cluster-lib.sh
source "$ROOT/scripts/cluster-lib.sh"
trap 'log "error: line $LINENO: \`$BASH_COMMAND\` failed (exit $?)"' ERR
[[ $(id -u) == 0 ]] || die "needs root"
if [[ -n $(kubepods_cgroups) ]]; then
  die "kubepods cgroups exist already (another cluster runs? make cluster-down): $(kubepods_cgroups | tail -n1)"
fi
ns_up && die "a cluster runs in $DIR (scripts/cluster-down.sh with BOXAUTH_CLUSTER_DIR=$DIR)"
# From nothing: no API objects or credentials of an earlier check.
case $DIR in / | "$HOME" | "$ROOT") die "refusing to use $DIR as the state dir" ;; esac
rm -rf "$DIR"

OUT=$(mktemp -d /tmp/cluster-check.XXXXXX)
FAILED=0
fail() { log "FAIL: $*"; FAILED=1; }
pass() { log "ok: $*"; }
timings=()
step_start=0
begin() { step_start=$SECONDS; log "--- $*"; }
took() { timings+=("$(printf '%-40s %4d s' "$1" $((SECONDS - step_start)))"); }

# snapshot FILE: the host state cluster-up.sh must not change.
snapshot() {
  {
    echo "## links"
    ip -o link show | sed -E 's/^[0-9]+: //; s/ qlen [0-9]+//; s/link\/ether [0-9a-f:]+ brd [0-9a-f:]+//'
    echo "## addresses"
    ip -o addr show | sed -E 's/^[0-9]+: //; s/valid_lft .*//'
    echo "## routes"
    ip route show table all
    ip -6 route show table all 2>/dev/null | grep -v '^local fe80\|^fe80' || true
    echo "## sysctls"
    sysctl net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv4.conf.all.route_localnet \
      vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
      net.bridge.bridge-nf-call-iptables net.netfilter.nf_conntrack_max 2>&1 | sort
    echo "## nft"
    nft list ruleset 2>&1
    echo "## mounts"
    awk '{ print $5, $4, $9, $10 }' /proc/self/mountinfo | sort
    # The hierarchies and their top-level groups, and kubepods anywhere (not
    # every group: the machine's own come and go under theirs meanwhile).
    echo "## cgroups"
    { find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d; find /sys/fs/cgroup -type d -name 'kubepods*'; } 2>/dev/null | sort -u
    echo "## paths"
    for p in /run/containerd /run/netns /var/run/netns /var/lib/kubelet /var/lib/cni /etc/cni /opt/cni \
      /var/log/pods /var/log/containers /var/lib/containerd /etc/kubernetes; do
      if [[ -e $p ]]; then echo "$p exists"; else echo "$p absent"; fi
    done
    echo "## host port $PORT"
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then echo listening; else echo free; fi
    echo "## processes of the cluster (namespaces, kubepods, state dir)"
    for f in /proc/[0-9]*; do
      cmd=$(tr '\0' ' ' 2>/dev/null <"$f/cmdline") || continue
      if [[ $cmd == *"$DIR/"* ]]; then echo "${f#/proc/} $cmd"; fi
    done
    ns_pids | sed 's/^/in the namespaces or kubepods: /'
  } >"$1"
}

begin "recording the host"
snapshot "$OUT/before"
took "record the host"

begin "cluster-up"
eval "$("$ROOT/scripts/cluster-up.sh")"
took "cluster-up (binaries cached)"
[[ $KUBECONFIG == "$DIR/kubeconfig" ]] || fail "cluster-up printed KUBECONFIG=$KUBECONFIG"
k() { "$KUBECTL" "$@"; }

# Everything below runs even when a step fails, so cluster-down always runs.
set +e
trap - ERR

begin "node and pods"
if k wait --for=condition=Ready "node/$NODE_NAME" --timeout=60s >/dev/null; then
  pass "node $NODE_NAME Ready"
else
  fail "node $NODE_NAME not Ready: $(k get node -o wide 2>&1)"
fi
k create namespace check >/dev/null
k -n check apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: { app: web }
spec:
  containers:
  - name: web
    image: boxauth.test/probe:1
    args: [serve, "8080"]
    ports: [{ containerPort: 8080 }]
    readinessProbe:
      httpGet: { path: /, port: 8080 }
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  containers:
  - name: client
    image: boxauth.test/probe:1
    args: [sleep]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: { app: web }
  ports: [{ port: 80, targetPort: 8080 }]
EOF
if k -n check wait --for=condition=Ready pod/web pod/client --timeout=120s >/dev/null; then
  pass "pods web and client Ready"
else
  fail "pods not Ready: $(k -n check get pods -o wide 2>&1; k -n check describe pods 2>&1 | tail -n 30)"
fi
took "two pods Ready (from apply)"

# eventually WANT CMD...: CMD's output, once it matches the glob WANT (retried for 60 s: a
# pod Ready is programmed into kube-proxy's rules and CoreDNS a moment later).
eventually() {
  local want=$1 out deadline=$((SECONDS + 60))
  shift
  while :; do
    out=$("$@" 2>&1)
    # shellcheck disable=SC2053 # $want is a glob on purpose
    if [[ $out == $want ]] || ((SECONDS >= deadline)); then
      printf '%s' "$out"
      return
    fi
    sleep 0.5
  done
}

begin "addresses, Service, DNS"
web_ip=$(k -n check get pod web -o jsonpath='{.status.podIP}')
svc_ip=$(k -n check get service web -o jsonpath='{.spec.clusterIP}')
bridge=$(in_ns ip -o -4 addr show dev cni0 2>&1)
if [[ $web_ip == "$NET.1."* && $bridge == *"inet $NET.1.1/24"* ]]; then
  pass "pod web has $web_ip on the bridge cni0 ($NET.1.1/24)"
else
  fail "pod address $web_ip, bridge: $bridge"
fi
body=$(eventually "probe web" in_ns "$BIN/probe" get "http://$web_ip:8080/")
[[ $body == "probe web" ]] && pass "pod answers on $web_ip:8080 from the namespace" ||
  fail "GET http://$web_ip:8080/ from the namespace: $body"
body=$(eventually "probe web" in_ns "$BIN/probe" get "http://$svc_ip/")
[[ $body == "probe web" ]] && pass "Service web ($svc_ip:80) answers from the namespace via kube-proxy" ||
  fail "GET http://$svc_ip/ from the namespace: $body"
resolved=$(eventually "$svc_ip" k -n check exec client -- /probe resolve web.check.svc.cluster.local)
[[ $resolved == "$svc_ip" ]] && pass "web.check.svc.cluster.local resolves to $svc_ip in a pod (CoreDNS)" ||
  fail "resolve web.check.svc.cluster.local in pod client: $resolved"
resolved=$(eventually "$NET.2.1" k -n check exec client -- /probe resolve kubernetes.default)
[[ $resolved == "$NET.2.1" ]] && pass "kubernetes.default resolves to $NET.2.1 in a pod (search path)" ||
  fail "resolve kubernetes.default in pod client: $resolved"
body=$(eventually "probe web" k -n check exec client -- /probe get http://web/)
[[ $body == "probe web" ]] && pass "pod client reaches http://web/ by name" ||
  fail "GET http://web/ in pod client: $body"
# The API server through the kubernetes Service, trusted with the CA and
# authenticated with the token the kubelet projects (a bad token gets 401,
# even on /version).
version=$(eventually '*"gitVersion"*' k -n check exec client -- /probe get-api /version)
[[ $version == *'"gitVersion"'* ]] && pass "pod client reaches the API server with its ServiceAccount token and CA" ||
  fail "GET https://kubernetes.default.svc/version in pod client: $version"
logs=$(k -n check logs web 2>&1)
[[ $logs == *"probe: serving on :8080"* ]] && pass "kubectl logs on the host shows pod web's output" ||
  fail "kubectl -n check logs web: $logs"
# What tests on the host use to reach a pod: kubectl port-forward, on a port
# of the host's loopback it picks (through the API server, the kubelet and
# containerd into the pod's namespace).
k -n check port-forward pod/web :8080 >"$OUT/port-forward" 2>&1 &
forward_pid=$!
forwarded=
for _ in $(seq 1 60); do
  forwarded=$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$OUT/port-forward")
  [[ -z $forwarded ]] || break
  sleep 0.5
done
body=$(curl -s --max-time 10 "http://127.0.0.1:${forwarded:-0}/" 2>&1)
[[ $body == "probe web" ]] && pass "kubectl port-forward on the host reaches pod web (127.0.0.1:$forwarded)" ||
  fail "port-forward to pod web: $body $(cat "$OUT/port-forward")"
kill "$forward_pid" 2>/dev/null
wait "$forward_pid" 2>/dev/null
took "addresses, Service, DNS, logs, port-forward"

begin "cluster-down"
# The state dir goes too, unless a check failed: then its logs stay.
if ((FAILED)); then wipe=(); else wipe=(--wipe); fi
"$ROOT/scripts/cluster-down.sh" "${wipe[@]}" || fail "cluster-down.sh failed"
took "cluster-down"

begin "recording the host again"
snapshot "$OUT/after"
if diff -u "$OUT/before" "$OUT/after" >"$OUT/diff"; then
  pass "the host is as before (interfaces, routes, sysctls, nft, mounts, cgroups, paths, processes)"
else
  fail "the host changed:"
  cat "$OUT/diff" >&2
fi

log "timings:"
for t in "${timings[@]}"; do log "  $t"; done
if ((FAILED)); then
  log "FAILED (snapshots in $OUT, logs in $DIR if it is there)"
  exit 1
fi
rm -rf "$OUT"
log "all checks passed"
