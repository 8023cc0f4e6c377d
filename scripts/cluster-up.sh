#!/usr/bin/env bash
# cluster-up.sh — a one-node Kubernetes cluster with real pods (a kubelet,
# Debian's containerd and runc), all of it inside a network namespace and a
# mount namespace this script creates.
#
# Usage:
#   eval "$(scripts/cluster-up.sh)"     # start (or reuse) and export KUBECONFIG
#   CLUSTER_IMAGES="a.tar b.tar" scripts/cluster-up.sh
#                                       # also import these OCI/docker archives
#                                       # (every run: re-importing is a no-op)
#   CLUSTER_BINARY_IMAGES="boxauth.test/hook:1=/tmp/hook" scripts/cluster-up.sh
#                                       # also import, under each NAME, an image
#                                       # of one layer: the static BINARY as
#                                       # /<basename>, its entrypoint (as pause)
#
# Stdout gets exactly one line, `export KUBECONFIG=<abs path>`: a kubeconfig for
# the host, whose server is https://127.0.0.1:$BOXAUTH_CLUSTER_PORT, a loopback
# port that nsforward publishes from inside the namespace. Inside the
# namespace (scripts/cluster-exec.sh CMD...) use <dir>/kubeconfig.netns
# (server https://<node ip>:6443), and reach pod and Service addresses, which
# exist only there. Progress goes to stderr. Idempotent: when the cluster
# runs it imports CLUSTER_IMAGES and prints the export line again.
#
# What stays on the host: the processes (stopped by cluster-down.sh), the
# state dir, the cgroups the kubelet makes (kubepods, removed by
# cluster-down.sh) and the loopback port. Not the host's interfaces, routes,
# sysctls or nft tables: the node address (node0), the pod bridge (cni0),
# ip_forward, kube-proxy's nft table all belong to the cluster's network
# namespace. Not the host's files: in the cluster's mount namespace /run is a
# tmpfs (containerd's hard-coded /run/containerd, the pods' netns mounts),
# /var/log is the state dir's log/ (pod logs), /var/lib an overlay whose
# writes go to the state dir (/var/lib/cni, the kubelet's hard-coded
# /var/lib/kubelet/device-plugins), and the four /proc/sys files the kubelet
# writes are the state dir's own files.
#
# Environment: see scripts/cluster-lib.sh (BOXAUTH_CLUSTER_DIR, _PORT, _NET),
# and BOXAUTH_CLUSTER_TIMEOUT, seconds each component may take (120), and
# BOXAUTH_CLUSTER_AUTH_CONFIG, an AuthenticationConfiguration file
# (apiserver.config.k8s.io/v1) for kube-apiserver --authentication-config: the
# `jwt` issuer of a box, as `boxauth kube-login setup` prints it, so people
# sign in to kubectl as box users (the issuer may be a box of this cluster:
# the API server is inside the namespace, where Service addresses are). Read
# where it is, and reloaded by kube-apiserver when it changes; setting or
# clearing it takes effect when kube-apiserver starts (cluster-down first).
# Binaries: scripts/kube-build.sh --node (run here; a no-op when cached).
set -euo pipefail

LOG_NAME=cluster-up
# shellcheck source=scripts/cluster-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster-lib.sh"
trap 'log "error: line $LINENO: \`$BASH_COMMAND\` failed (exit $?)"' ERR
TIMEOUT=${BOXAUTH_CLUSTER_TIMEOUT:-120}
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "BOXAUTH_CLUSTER_TIMEOUT is not a number"
read -r -a IMAGES <<<"${CLUSTER_IMAGES:-}"
read -r -a BINARY_IMAGES <<<"${CLUSTER_BINARY_IMAGES:-}"
AUTH_CONFIG=${BOXAUTH_CLUSTER_AUTH_CONFIG:-}

for arg in "$@"; do
  case $arg in
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) die "unknown argument: $arg (see --help)" ;;
  esac
done
[[ $(id -u) == 0 ]] || die "needs root (namespaces, mounts, cgroups)"
for f in "${IMAGES[@]}"; do
  [[ -f $f ]] || die "CLUSTER_IMAGES: no such file: $f"
done
for pair in "${BINARY_IMAGES[@]}"; do
  [[ $pair == ?*=?* && -x ${pair#*=} ]] || die "CLUSTER_BINARY_IMAGES: not NAME=an executable file: $pair"
done
if [[ -n $AUTH_CONFIG ]]; then
  [[ -f $AUTH_CONFIG ]] || die "BOXAUTH_CLUSTER_AUTH_CONFIG: no such file: $AUTH_CONFIG"
  AUTH_CONFIG=$(realpath "$AUTH_CONFIG")
fi

"$ROOT/scripts/kube-build.sh" --node
for cmd in curl openssl flock setsid nsenter unshare mountpoint ip nft sysctl tar sha256sum \
  containerd containerd-shim-runc-v2 runc ctr; do
  command -v "$cmd" >/dev/null || die "$cmd is not on PATH (apt-get install containerd runc containernetworking-plugins nftables)"
done
CNI_BIN=/usr/lib/cni
[[ -x $CNI_BIN/bridge && -x $CNI_BIN/host-local && -x $CNI_BIN/loopback ]] ||
  die "no CNI plugins in $CNI_BIN (apt-get install containernetworking-plugins)"

umask 022
CERTS=$DIR/certs
KCFG=$DIR/kubeconfigs
CTRD=$DIR/containerd
SOCK=$CTRD/containerd.sock
mkdir -p "$NS" "$CERTS" "$KCFG" "$DIR/etcd" "$CTRD" "$DIR/cni/net.d" "$DIR/kubelet" \
  "$DIR/log" "$DIR/varlib/upper" "$DIR/varlib/work" "$DIR/sysctl" "$DIR/images"

exec 9>"$DIR/.lock"
flock -w 300 9 || die "another cluster-up/cluster-down holds $DIR/.lock"

# ---- processes --------------------------------------------------------------

# Processes this run started: stopped again (and the namespaces removed by
# cluster-down.sh) if the run does not succeed.
STARTED=()
declare -A STARTED_PID=()
OK=0
cleanup() {
  if [[ $OK != 1 && ${#STARTED[@]} -gt 0 ]]; then
    log "start failed; stopping what this run started (logs stay in $DIR)"
    exec 9>&-
    "$ROOT/scripts/cluster-down.sh" || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME [--host] PROGRAM ARGS...: run PROGRAM detached (own session, stdin
# closed) inside the namespaces (--host: in the host's), log to NAME.log.
start() {
  local name=$1 pid wrap=(nsenter --mount="$MNT_NS" --net="$NET_NS" --)
  shift
  if [[ $1 == --host ]]; then wrap=(); shift; fi
  printf '\n==== %s starting %s\n' "$(date -u +%FT%TZ)" "$name" >>"$DIR/$name.log"
  # 9>&-: the child must not inherit the lock. nsenter execs PROGRAM, so $!
  # is PROGRAM's pid.
  setsid "${wrap[@]}" "$@" </dev/null >>"$DIR/$name.log" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$DIR/$name.pid"
  STARTED+=("$name")
  STARTED_PID[$name]=$pid
  log "started $name (pid $pid), log $DIR/$name.log"
}

running() {
  if [[ -n ${STARTED_PID[$1]:-} ]]; then alive "${STARTED_PID[$1]}"; else [[ -n $(pid_of "$1") ]]; fi
}

# wait_for NAME DESCRIPTION CMD...: until CMD succeeds (run every half
# second), NAME exits (die with its log) or TIMEOUT passes.
wait_for() {
  local name=$1 what=$2 deadline=$((SECONDS + TIMEOUT))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ! running "$name"; then
      log "$name exited; last lines of $DIR/$name.log:"
      tail -n 40 "$DIR/$name.log" >&2
      die "$name did not start"
    fi
    if ((SECONDS >= deadline)); then
      log "$name: no $what after $TIMEOUT s; last lines of $DIR/$name.log:"
      tail -n 40 "$DIR/$name.log" >&2
      die "$name did not become ready"
    fi
    sleep 0.5
  done
  log "$name is ready"
}

# http_ok URL: inside the namespace, URL answers 200.
http_ok() { in_ns curl -skf --max-time 2 -o /dev/null "$1"; }

# ensure NAME PROGRAM ARGS...: start NAME unless it already runs.
ensure() {
  local name=$1
  if [[ -n $(pid_of "$name") ]]; then
    log "$name already running (pid $(pid_of "$name"))"
  else
    start "$@"
  fi
}

# ---- namespaces -------------------------------------------------------------

if ns_up; then
  log "namespaces already exist ($NS)"
else
  # A mount namespace can be kept by a bind mount only on a private mount
  # (else the bind would propagate into the namespace itself): make the
  # directory one. Undone by cluster-down.sh.
  if ! mountpoint -q "$NS"; then
    mount --bind "$NS" "$NS"
    mount --make-private "$NS"
  fi
  touch "$NET_NS" "$MNT_NS"
  unshare --net="$NET_NS" --mount="$MNT_NS" --propagation private true
  ns_up || die "unshare did not keep the namespaces in $NS"
  STARTED+=(namespaces) # so a failed start removes them again
  log "created the network and mount namespaces in $NS"
  # The kubelet writes these four on start (vm.overcommit_memory=1, ...):
  # here it writes the state dir's copies, whatever protectKernelDefaults says.
  sysctl_binds=()
  for key in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops; do
    copy=$DIR/sysctl/${key//\//.}
    cat "/proc/sys/$key" >"$copy"
    sysctl_binds+=("$copy" "/proc/sys/$key")
  done
  in_ns bash -euo pipefail -s -- "$NODE_IP" "$DIR" "${sysctl_binds[@]}" <<'EOF'
node_ip=$1 dir=$2
shift 2
ip link set lo up
# The node's interface: a veth pair whose both ends stay here (this kernel
# has no dummy interfaces), so it has a carrier and leads nowhere.
ip link add node0 type veth peer name node0-peer
ip link set node0-peer up
ip addr add "$node_ip/24" dev node0
ip link set node0 up
# Every address the namespace does not know (a Service address before
# kube-proxy's DNAT) is routed to node0: a connect() needs a route.
ip route add default dev node0
# Pods reach Services and each other through the node: forwarding in this
# namespace only (net.ipv4.ip_forward is per network namespace).
sysctl -qw net.ipv4.ip_forward=1
mount -t tmpfs -o mode=755 tmpfs /run
mount --bind "$dir/log" /var/log
mount -t overlay overlay \
  -o "lowerdir=/var/lib,upperdir=$dir/varlib/upper,workdir=$dir/varlib/work" /var/lib
while (($#)); do
  mount --bind "$1" "$2"
  shift 2
done
EOF
fi

# ---- credentials (made once per state dir) ---------------------------------

# A CA of the cluster's own: the API server's serving certificate names the
# node address, the loopback the host reaches it on, and the names pods use;
# the API server's client certificate is what the kubelet trusts.
if [[ ! -s $CERTS/ca.crt ]]; then
  log "generating the cluster's CA and certificates"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=boxauth-cluster-ca \
    -keyout "$CERTS/ca.key" -out "$CERTS/ca.crt" 2>/dev/null
  cert() { # NAME SUBJECT [SANS]
    openssl req -newkey rsa:2048 -nodes -subj "$2" \
      -keyout "$CERTS/$1.key" -out "$CERTS/$1.csr" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\n%s\n' "${3:+subjectAltName=$3}" >"$CERTS/$1.ext"
    openssl x509 -req -in "$CERTS/$1.csr" -CA "$CERTS/ca.crt" -CAkey "$CERTS/ca.key" \
      -CAcreateserial -days 3650 -extfile "$CERTS/$1.ext" -out "$CERTS/$1.crt" 2>/dev/null
    rm -f "$CERTS/$1.csr" "$CERTS/$1.ext"
  }
  cert apiserver /CN=kube-apiserver "IP:$NODE_IP,IP:127.0.0.1,IP:$NET.2.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$CERTS/sa.key" 2>/dev/null
  openssl pkey -in "$CERTS/sa.key" -pubout -out "$CERTS/sa.pub"
  chmod 600 "$CERTS"/*.key
fi

# One token per component, named as the built-in RBAC roles expect.
if [[ ! -s $DIR/tokens.csv ]]; then
  {
    printf '%s,admin,admin,"system:masters"\n' "$(openssl rand -hex 32)"
    printf '%s,system:node:%s,node,"system:nodes"\n' "$(openssl rand -hex 32)" "$NODE_NAME"
    printf '%s,system:kube-controller-manager,kcm\n' "$(openssl rand -hex 32)"
    printf '%s,system:kube-scheduler,scheduler\n' "$(openssl rand -hex 32)"
    printf '%s,system:kube-proxy,kube-proxy\n' "$(openssl rand -hex 32)"
    printf '%s,boxauth:coredns,coredns\n' "$(openssl rand -hex 32)"
  } >"$DIR/tokens.csv"
  chmod 600 "$DIR/tokens.csv"
fi
token_of() { awk -F, -v u="$1" '$2 == u { print $1 }' "$DIR/tokens.csv"; }

# kubeconfig FILE SERVER USER [TLS-SERVER-NAME]
kubeconfig() {
  cat >"$1.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: boxauth-cluster
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 <"$CERTS/ca.crt")
users:
- name: $3
  user:
    token: $(token_of "$3")
contexts:
- name: boxauth-cluster
  context:
    cluster: boxauth-cluster
    user: $3
current-context: boxauth-cluster
EOF
  chmod 600 "$1.tmp"
  mv "$1.tmp" "$1"
}
INSIDE=https://$NODE_IP:$API_PORT
kubeconfig "$DIR/kubeconfig" "https://127.0.0.1:$PORT" admin
kubeconfig "$DIR/kubeconfig.netns" "$INSIDE" admin
for user in "system:node:$NODE_NAME" system:kube-controller-manager system:kube-scheduler \
  system:kube-proxy boxauth:coredns; do
  kubeconfig "$KCFG/${user##*:}" "$INSIDE" "$user"
done
kc() { in_ns "$KUBECTL" --kubeconfig="$DIR/kubeconfig.netns" "$@"; }

# ---- etcd and kube-apiserver ------------------------------------------------

ensure etcd "$BIN/etcd" \
  --name=boxauth-cluster \
  --data-dir="$DIR/etcd" \
  --listen-client-urls=http://127.0.0.1:2379 \
  --advertise-client-urls=http://127.0.0.1:2379 \
  --listen-peer-urls=http://127.0.0.1:2380 \
  --initial-advertise-peer-urls=http://127.0.0.1:2380 \
  --initial-cluster=boxauth-cluster=http://127.0.0.1:2380 \
  --listen-metrics-urls=http://127.0.0.1:2381 \
  --unsafe-no-fsync=true
wait_for etcd "health" http_ok http://127.0.0.1:2379/health

ISSUER=https://kubernetes.default.svc.cluster.local
APISERVER_AUTHN=()
[[ -z $AUTH_CONFIG ]] || APISERVER_AUTHN=(--authentication-config="$AUTH_CONFIG")
ensure kube-apiserver "$BIN/kube-apiserver" \
  --advertise-address="$NODE_IP" \
  --bind-address="$NODE_IP" \
  --secure-port="$API_PORT" \
  --tls-cert-file="$CERTS/apiserver.crt" \
  --tls-private-key-file="$CERTS/apiserver.key" \
  --client-ca-file="$CERTS/ca.crt" \
  --etcd-servers=http://127.0.0.1:2379 \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --allow-privileged=true \
  --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NodeRestriction \
  --token-auth-file="$DIR/tokens.csv" \
  --service-account-issuer="$ISSUER" \
  --api-audiences="$ISSUER" \
  --service-account-jwks-uri="$INSIDE/openid/v1/jwks" \
  --service-account-signing-key-file="$CERTS/sa.key" \
  --service-account-key-file="$CERTS/sa.pub" \
  --kubelet-client-certificate="$CERTS/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$CERTS/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --endpoint-reconciler-type=lease \
  "${APISERVER_AUTHN[@]}"
wait_for kube-apiserver "/readyz" http_ok "$INSIDE/readyz"

# The API server on the host's loopback, for kubectl and tests on the host.
if [[ -z $(pid_of nsforward) ]] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  die "port $PORT is in use on the host (set BOXAUTH_CLUSTER_PORT)"
fi
ensure nsforward --host "$BIN/nsforward" "127.0.0.1:$PORT" "$NET_NS" "$NODE_IP:$API_PORT"
wait_for nsforward "answer on 127.0.0.1:$PORT" \
  curl -skf --max-time 2 -o /dev/null "https://127.0.0.1:$PORT/readyz"

# ---- containerd and images --------------------------------------------------

cat >"$DIR/cni/net.d/10-boxauth.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "boxauth-pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$POD_CIDR" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$DIR/cni/ipam"
      }
    }
  ]
}
EOF

PAUSE_IMAGE=boxauth.test/pause:1
PROBE_IMAGE=boxauth.test/probe:1
cat >"$CTRD/config.toml" <<EOF
version = 2
root = "$CTRD/root"
state = "$CTRD/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$CTRD/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # Root may not lower a process's oom_score_adj without CAP_SYS_RESOURCE:
  # without this, runc fails with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  disable_apparmor = true
  systemd_cgroup = false
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$CTRD/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$DIR/cni/net.d"
EOF
ensure containerd /usr/bin/containerd --config "$CTRD/config.toml"
ctr_() { in_ns ctr --address "$SOCK" "$@"; }
wait_for containerd "answer on $SOCK" ctr_ version

# oci_archive OUT NAME BINARY: an OCI image archive of one layer holding
# BINARY as /<basename>, its entrypoint; named NAME.
oci_archive() {
  local out=$1 name=$2 binary=$3 t layer config manifest entry
  t=$(mktemp -d "$DIR/images/.build.XXXXXX")
  entry=$(basename "$binary")
  mkdir -p "$t/rootfs" "$t/oci/blobs/sha256"
  install -m 755 "$binary" "$t/rootfs/$entry"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$t/rootfs" -cf "$t/layer.tar" "$entry"
  blob() { # FILE -> digest hex; copies FILE into the blobs
    local h
    h=$(sha256sum "$1" | cut -d' ' -f1)
    cp "$1" "$t/oci/blobs/sha256/$h"
    echo "$h"
  }
  layer=$(blob "$t/layer.tar")
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/%s"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entry" "$layer" >"$t/config.json"
  config=$(blob "$t/config.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' \
    "$config" "$(stat -c %s "$t/config.json")" "$layer" "$(stat -c %s "$t/layer.tar")" >"$t/manifest.json"
  manifest=$(blob "$t/manifest.json")
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest" "$(stat -c %s "$t/manifest.json")" "$name" "${name##*:}" >"$t/oci/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$t/oci/oci-layout"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$t/oci" -cf "$out.tmp" .
  mv "$out.tmp" "$out"
  rm -rf "$t"
}

# import_image ARCHIVE: into the namespace the kubelet's CRI uses, never pulled.
import_image() {
  log "importing $1"
  ctr_ -n k8s.io images import "$1" >&2
}

oci_archive "$DIR/images/pause.tar" "$PAUSE_IMAGE" "$BIN/pause"
oci_archive "$DIR/images/probe.tar" "$PROBE_IMAGE" "$BIN/probe"
for pair in "${BINARY_IMAGES[@]}"; do
  image=${pair%%=*}
  archive="$DIR/images/binary-${image//[^A-Za-z0-9.-]/_}.tar"
  oci_archive "$archive" "$image" "${pair#*=}"
  IMAGES+=("$archive")
done
for f in "$DIR/images/pause.tar" "$DIR/images/probe.tar" "${IMAGES[@]}"; do
  import_image "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"
done

# ---- controllers ------------------------------------------------------------

ensure kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$KCFG/kube-controller-manager" \
  --authentication-kubeconfig="$KCFG/kube-controller-manager" \
  --authorization-kubeconfig="$KCFG/kube-controller-manager" \
  --bind-address=127.0.0.1 \
  --leader-elect=false \
  --service-account-private-key-file="$CERTS/sa.key" \
  --root-ca-file="$CERTS/ca.crt" \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --use-service-account-credentials=true
ensure kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig="$KCFG/kube-scheduler" \
  --authentication-kubeconfig="$KCFG/kube-scheduler" \
  --authorization-kubeconfig="$KCFG/kube-scheduler" \
  --bind-address=127.0.0.1 \
  --leader-elect=false

# ---- kubelet ----------------------------------------------------------------

# The cgroupfs driver puts every pod under /sys/fs/cgroup/<hierarchy>/kubepods:
# a second kubelet on the machine would share (and its cleanup remove) them.
if [[ -z $(pid_of kubelet) && -n $(kubepods_cgroups) ]]; then
  die "kubepods cgroups exist already ($(kubepods_cgroups | tail -n1)): another cluster runs on this machine (make cluster-down, or its BOXAUTH_CLUSTER_DIR)"
fi

printf 'nameserver %s\n' "$NODE_IP" >"$DIR/resolv.conf"
cat >"$DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
# 1.35 refuses cgroup v1 unless told otherwise; this machine has only v1.
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: false
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: $DIR/resolv.conf
# Only the API server holds a certificate of the cluster's CA.
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: false }
  x509: { clientCAFile: $CERTS/ca.crt }
authorization: { mode: AlwaysAllow }
# The images cannot be pulled again: never collect them, and evict only
# when the disk is really full.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
rotateCertificates: false
EOF
ensure kubelet "$BIN/kubelet" \
  --config="$DIR/kubelet.yaml" \
  --kubeconfig="$KCFG/$NODE_NAME" \
  --hostname-override="$NODE_NAME" \
  --node-ip="$NODE_IP" \
  --root-dir="$DIR/kubelet"
wait_for kubelet "/healthz" http_ok http://127.0.0.1:10248/healthz

# ---- kube-proxy -------------------------------------------------------------

# nftables mode, its table only in the namespace; every conntrack flag 0 so it
# writes no sysctl (nf_conntrack_max is not per namespace); --masquerade-all
# so a pod reaching a Service backed by a pod on the same bridge gets the
# answer back through the node (no br_netfilter here).
ensure kube-proxy "$BIN/kube-proxy" \
  --kubeconfig="$KCFG/kube-proxy" \
  --hostname-override="$NODE_NAME" \
  --proxy-mode=nftables \
  --cluster-cidr="$POD_CIDR" \
  --masquerade-all \
  --nodeport-addresses="$NODE_IP/32" \
  --conntrack-max-per-core=0 \
  --conntrack-min=0 \
  --conntrack-tcp-timeout-established=0 \
  --conntrack-tcp-timeout-close-wait=0 \
  --metrics-bind-address=127.0.0.1:10249 \
  --healthz-bind-address=127.0.0.1:10256

# ---- cluster DNS ------------------------------------------------------------

kc apply --server-side --force-conflicts --field-manager=boxauth-cluster-up \
  -f "$ROOT/scripts/kube-issuer-discovery.yaml" >/dev/null
# CoreDNS runs on the node (in the namespace), behind a kube-dns Service
# without selector and an EndpointSlice of its own naming the node address.
# It answers for the cluster's zones only: nothing is forwarded, as there is
# no upstream inside the namespace (hence no loop plugin either).
kc apply --server-side --force-conflicts --field-manager=boxauth-cluster-up -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: boxauth:coredns
rules:
- apiGroups: [""]
  resources: [services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: boxauth:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: boxauth:coredns
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: boxauth:coredns
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: { k8s-app: kube-dns }
spec:
  clusterIP: $DNS_IP
  ports:
  - { name: dns, port: 53, protocol: UDP, targetPort: 53 }
  - { name: dns-tcp, port: 53, protocol: TCP, targetPort: 53 }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-node
  namespace: kube-system
  labels:
    kubernetes.io/service-name: kube-dns
    endpointslice.kubernetes.io/managed-by: boxauth-cluster-up
addressType: IPv4
endpoints:
- addresses: [$NODE_IP]
  conditions: { ready: true }
  nodeName: $NODE_NAME
ports:
- { name: dns, port: 53, protocol: UDP }
- { name: dns-tcp, port: 53, protocol: TCP }
EOF
cat >"$DIR/Corefile" <<EOF
.:53 {
    errors
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $KCFG/coredns boxauth-cluster
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
EOF
ensure coredns "$BIN/coredns" -conf "$DIR/Corefile"
wait_for coredns "/ready" http_ok http://127.0.0.1:8181/ready
wait_for kube-proxy "/healthz" http_ok http://127.0.0.1:10256/healthz

log "waiting for node $NODE_NAME to be Ready"
wait_for kubelet "Ready node" kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s
# Pods of the default namespace need its ServiceAccount (made by the
# controller manager's ServiceAccount controller).
wait_for kube-controller-manager "default ServiceAccount" kc get serviceaccount default

OK=1
log "cluster up: node $NODE_NAME ($NODE_IP) Ready; API server https://127.0.0.1:$PORT on the host, $INSIDE inside (scripts/cluster-exec.sh)"
echo "export KUBECONFIG=$DIR/kubeconfig"
