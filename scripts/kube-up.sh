#!/usr/bin/env bash
# kube-up.sh — start a local test cluster: etcd + kube-apiserver on loopback,
# run as controller-runtime's envtest runs them (no kubelet, no controllers).
#
# Usage:
#   eval "$(scripts/kube-up.sh)"            # start (or reuse) and export KUBECONFIG
#   scripts/kube-up.sh --restart-apiserver  # restart only kube-apiserver, same flags
#   scripts/kube-up.sh --rotate-sa-key      # new service-account signing key, restart
#                                           # kube-apiserver; old public keys stay valid
#   scripts/kube-up.sh --forget-old-sa-keys # drop the old public keys, restart
#                                           # kube-apiserver (old tokens then fail)
#
# Stdout gets exactly one line, `export KUBECONFIG=<abs path>`; progress goes to
# stderr. Idempotent: when the cluster already runs it says so and prints the
# export line again (CRDs are re-applied, which is a no-op when unchanged).
# Binaries come from scripts/kube-build.sh (run first; a no-op when cached).
#
# Environment (all optional):
#   BOXAUTH_KUBE_DIR        state dir (default <repo>/.boxauth/kube): etcd data,
#                           certs/, sa/, logs, pid files, kubeconfig, admin-token
#   BOXAUTH_KUBE_PORT       kube-apiserver secure port on 127.0.0.1 (6443)
#   BOXAUTH_ETCD_PORT       etcd client port (2379)
#   BOXAUTH_ETCD_PEER_PORT  etcd peer port (etcd port + 1)
#   BOXAUTH_KUBE_CACHE      binary cache (see kube-build.sh)
#   BOXAUTH_KUBE_ISSUER     service-account issuer / API audience
#                           (https://kubernetes.default.svc.cluster.local)
#   BOXAUTH_KUBE_SA_KEY_FILES  extra PEM public keys (':'-separated) accepted for
#                           service-account tokens and listed in /openid/v1/jwks
#   BOXAUTH_KUBE_ROTATE_SA_KEY=1  same as --rotate-sa-key
#   BOXAUTH_KUBE_CRDS       directory of CRDs to apply (<repo>/crds)
#   BOXAUTH_KUBE_TIMEOUT    seconds each component may take to become ready (60)
#   BOXAUTH_KUBE_AUTH_CONFIG  an AuthenticationConfiguration file (apiserver.config.k8s.io/v1)
#                           for kube-apiserver --authentication-config: e.g. the `jwt`
#                           issuer of a box, as `boxauth kube-login setup` prints it, so
#                           people sign in to kubectl as box users. The static admin token,
#                           service-account tokens and client certificates keep working.
#                           The file is read where it is: kube-apiserver reloads it when it
#                           changes. Setting or clearing the variable needs a new
#                           kube-apiserver (--restart-apiserver) when one already runs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${BOXAUTH_KUBE_DIR:-$ROOT/.boxauth/kube}
PORT=${BOXAUTH_KUBE_PORT:-6443}
ETCD_PORT=${BOXAUTH_ETCD_PORT:-2379}
ETCD_PEER_PORT=${BOXAUTH_ETCD_PEER_PORT:-$((ETCD_PORT + 1))}
CACHE=${BOXAUTH_KUBE_CACHE:-$HOME/.cache/boxauth/kube}
BIN=$CACHE/bin
ISSUER=${BOXAUTH_KUBE_ISSUER:-https://kubernetes.default.svc.cluster.local}
CRDS=${BOXAUTH_KUBE_CRDS:-$ROOT/crds}
TIMEOUT=${BOXAUTH_KUBE_TIMEOUT:-60}
ROTATE=${BOXAUTH_KUBE_ROTATE_SA_KEY:-0}
FORGET_OLD_KEYS=0
RESTART_APISERVER=0

log() { printf 'kube-up: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
trap 'log "error: line $LINENO: \`$BASH_COMMAND\` failed (exit $?)"' ERR

for arg in "$@"; do
  case $arg in
    --restart-apiserver) RESTART_APISERVER=1 ;;
    --rotate-sa-key) ROTATE=1 ;;
    --forget-old-sa-keys) FORGET_OLD_KEYS=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) die "unknown argument: $arg (see --help)" ;;
  esac
done
if [[ $ROTATE == 1 || $FORGET_OLD_KEYS == 1 ]]; then RESTART_APISERVER=1; fi
for p in "$PORT" "$ETCD_PORT" "$ETCD_PEER_PORT" "$TIMEOUT"; do
  [[ $p =~ ^[0-9]+$ ]] || die "not a number: $p"
done
AUTH_CONFIG=${BOXAUTH_KUBE_AUTH_CONFIG:-}
if [[ -n $AUTH_CONFIG ]]; then
  [[ -f $AUTH_CONFIG ]] || die "BOXAUTH_KUBE_AUTH_CONFIG: no such file: $AUTH_CONFIG"
  # kube-apiserver runs from another directory and watches the file by this name.
  AUTH_CONFIG=$(cd "$(dirname "$AUTH_CONFIG")" && pwd)/$(basename "$AUTH_CONFIG")
fi

"$ROOT/scripts/kube-build.sh"
for cmd in curl openssl flock setsid; do
  command -v "$cmd" >/dev/null || die "$cmd is not on PATH"
done
# kubectl of the cluster's own release (built by kube-build.sh).
KUBECTL=$BIN/kubectl

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
KUBECONFIG_FILE=$DIR/kubeconfig
CERT_DIR=$DIR/certs
SA_DIR=$DIR/sa
umask 077
mkdir -p "$DIR/etcd" "$CERT_DIR" "$SA_DIR/previous"

# One kube-up/kube-down at a time per state dir.
exec 9>"$DIR/.lock"
flock -w 300 9 || die "another kube-up/kube-down holds $DIR/.lock"

# ---- processes --------------------------------------------------------------

# alive, pid_of
# shellcheck source=scripts/kube-lib.sh
source "$ROOT/scripts/kube-lib.sh"

# stop NAME [PID]: SIGTERM the process (PID, else the recorded pid), SIGKILL after 20 s.
stop() {
  local name=$1 pid=${2:-} i
  [[ -n $pid ]] || pid=$(pid_of "$name")
  if [[ -n $pid ]] && alive "$pid"; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
      alive "$pid" || break
      sleep 0.1
    done
    if alive "$pid"; then
      log "$name did not stop in 20 s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      while alive "$pid"; do sleep 0.1; done
    fi
  fi
  rm -f "$DIR/$name.pid"
}

# Processes this run started, and their pids: stopped again if the run does not
# succeed, so a failed start leaves nothing behind. Stopped by the pid $! gave, not
# by pid_of: a child that has not reached exec yet (a loaded machine) does not look
# like NAME, and pid_of would take it for gone and leave it running, unrecorded.
STARTED=()
declare -A STARTED_PID=()
OK=0
cleanup() {
  local i
  if [[ $OK != 1 ]]; then
    for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do stop "${STARTED[i]}" "${STARTED_PID[${STARTED[i]}]}"; done
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start NAME ARGS...: run detached (own session, stdin closed), log to NAME.log.
start() {
  local name=$1 pid
  shift
  printf '\n==== %s starting %s\n' "$(date -u +%FT%TZ)" "$name" >>"$DIR/$name.log"
  # 9>&-: the child must not inherit the lock of the state dir.
  setsid "$BIN/$name" "$@" </dev/null >>"$DIR/$name.log" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$DIR/$name.pid"
  STARTED+=("$name")
  STARTED_PID[$name]=$pid
  log "started $name (pid $pid), log $DIR/$name.log"
}

# running NAME: whether NAME still runs. One this run started is its child: it runs
# while that pid is alive, whatever its command line says yet (until the child has
# exec'd, /proc shows this script's). Otherwise, the recorded pid (pid_of).
running() {
  if [[ -n ${STARTED_PID[$1]:-} ]]; then
    alive "${STARTED_PID[$1]}"
  else
    [[ -n $(pid_of "$1") ]]
  fi
}

# wait_ready NAME URL PATTERN: poll URL until it answers 200 with a body that
# matches the glob PATTERN.
wait_ready() {
  local name=$1 url=$2 want=$3 deadline=$((SECONDS + TIMEOUT)) out code body
  while :; do
    out=$(curl -sk --max-time 2 -w '\n%{http_code}' "$url" 2>/dev/null || true)
    code=${out##*$'\n'} body=${out%$'\n'*}
    # shellcheck disable=SC2053 # $want is a glob on purpose
    if [[ $code == 200 && $body == $want ]]; then
      log "$name is ready"
      return 0
    fi
    if ! running "$name"; then
      log "$name exited; last lines of $DIR/$name.log:"
      tail -n 40 "$DIR/$name.log" >&2
      die "$name did not start"
    fi
    if ((SECONDS >= deadline)); then
      log "$name not ready after ${TIMEOUT} s ($url: HTTP ${code:-none} ${body:0:300}); last lines of $DIR/$name.log:"
      tail -n 40 "$DIR/$name.log" >&2
      die "$name did not become ready"
    fi
    sleep 0.5
  done
}

# ---- credentials (made once per state dir, kept across restarts) ------------

if [[ ! -s $DIR/admin-token ]]; then
  openssl rand -hex 32 >"$DIR/admin-token"
fi
ADMIN_TOKEN=$(<"$DIR/admin-token")
printf '%s,admin,admin,"system:masters"\n' "$ADMIN_TOKEN" >"$DIR/tokens.csv"

new_sa_key() {
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$SA_DIR/signing.key.new" 2>/dev/null
  openssl pkey -in "$SA_DIR/signing.key.new" -pubout -out "$SA_DIR/signing.pub.new"
  mv "$SA_DIR/signing.pub.new" "$SA_DIR/signing.pub"
  mv "$SA_DIR/signing.key.new" "$SA_DIR/signing.key"
}
if [[ ! -s $SA_DIR/signing.key || ! -s $SA_DIR/signing.pub ]]; then
  log "generating the service-account signing key"
  new_sa_key
elif [[ $ROTATE == 1 ]]; then
  keep=$SA_DIR/previous/$(date -u +%Y%m%dT%H%M%SZ)-$$.pub
  mv "$SA_DIR/signing.pub" "$keep"
  rm -f "$SA_DIR/signing.key"
  new_sa_key
  log "rotated the service-account signing key; previous public key kept in $keep"
fi
if [[ $FORGET_OLD_KEYS == 1 ]]; then
  rm -f "$SA_DIR"/previous/*.pub
  log "removed the previous service-account public keys"
fi

# ---- etcd -------------------------------------------------------------------

ETCD_URL=http://127.0.0.1:$ETCD_PORT
if [[ -n $(pid_of etcd) ]]; then
  log "etcd already running (pid $(pid_of etcd))"
else
  for p in "$ETCD_PORT" "$ETCD_PEER_PORT"; do
    if port_busy "$p"; then die "port $p is in use (set BOXAUTH_ETCD_PORT / BOXAUTH_ETCD_PEER_PORT)"; fi
  done
  start etcd \
    --name=boxauth \
    --data-dir="$DIR/etcd" \
    --listen-client-urls="$ETCD_URL" \
    --advertise-client-urls="$ETCD_URL" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="boxauth=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync=true
fi
wait_ready etcd "$ETCD_URL/health" '*"health":"true"*'

# ---- kube-apiserver ---------------------------------------------------------

sa_key_flags=(--service-account-key-file="$SA_DIR/signing.pub")
for f in "$SA_DIR"/previous/*.pub; do
  if [[ -f $f ]]; then sa_key_flags+=(--service-account-key-file="$f"); fi
done
IFS=: read -r -a extra_keys <<<"${BOXAUTH_KUBE_SA_KEY_FILES:-}"
for f in "${extra_keys[@]}"; do
  [[ -n $f ]] || continue
  [[ -f $f ]] || die "BOXAUTH_KUBE_SA_KEY_FILES: no such file: $f"
  sa_key_flags+=(--service-account-key-file="$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
done

APISERVER_ARGS=(
  --advertise-address=127.0.0.1
  --bind-address=127.0.0.1
  --secure-port="$PORT"
  --cert-dir="$CERT_DIR"
  --etcd-servers="$ETCD_URL"
  # A Service per Box: a thousand boxes (make bench-operator-scale) need more than a /24's 254 addresses.
  --service-cluster-ip-range=10.0.0.0/16
  --allow-privileged=true
  --authorization-mode=RBAC
  --anonymous-auth=true
  --token-auth-file="$DIR/tokens.csv"
  --service-account-issuer="$ISSUER"
  --api-audiences="$ISSUER"
  --service-account-jwks-uri="https://127.0.0.1:$PORT/openid/v1/jwks"
  --service-account-signing-key-file="$SA_DIR/signing.key"
  "${sa_key_flags[@]}"
  # ServiceAccount admission would reject every Pod: the "default"
  # ServiceAccount of a namespace is made by kube-controller-manager, which
  # does not run here (envtest disables it for the same reason).
  --disable-admission-plugins=ServiceAccount
  # The "kubernetes" Service endpoints would point at 127.0.0.1, which
  # Endpoints validation rejects (loopback); nothing in-cluster needs them.
  # (With it, the log's "Found stale data, removed previous endpoints" error
  # at start-up is harmless.)
  --endpoint-reconciler-type=none
)
if [[ -n $AUTH_CONFIG ]]; then
  APISERVER_ARGS+=(--authentication-config="$AUTH_CONFIG")
fi

if [[ -n $(pid_of kube-apiserver) && $RESTART_APISERVER == 1 ]]; then
  stop kube-apiserver
fi
if [[ -n $(pid_of kube-apiserver) ]]; then
  log "kube-apiserver already running (pid $(pid_of kube-apiserver))"
else
  if port_busy "$PORT"; then die "port $PORT is in use (set BOXAUTH_KUBE_PORT)"; fi
  start kube-apiserver "${APISERVER_ARGS[@]}"
fi
wait_ready kube-apiserver "https://127.0.0.1:$PORT/readyz" ok

# ---- kubeconfig -------------------------------------------------------------

# The apiserver writes a self-signed CA + serving certificate into --cert-dir
# on its first start and reuses them on restarts. Its SANs are 127.0.0.1,
# 10.0.0.1 and kubernetes.default[.svc], not "localhost": use 127.0.0.1.
if [[ -s $CERT_DIR/apiserver.crt ]]; then
  tls_line="    certificate-authority-data: $(base64 -w0 <"$CERT_DIR/apiserver.crt")"
else
  tls_line="    insecure-skip-tls-verify: true"
fi
cat >"$KUBECONFIG_FILE.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: boxauth
  cluster:
    server: https://127.0.0.1:$PORT
$tls_line
users:
- name: admin
  user:
    token: $ADMIN_TOKEN
contexts:
- name: boxauth
  context:
    cluster: boxauth
    user: admin
current-context: boxauth
EOF
mv "$KUBECONFIG_FILE.tmp" "$KUBECONFIG_FILE"

kc() { "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" "$@"; }
kc get --raw=/version >/dev/null || die "kubectl cannot reach the apiserver with $KUBECONFIG_FILE"

# OIDC discovery readable without credentials.
kc apply --server-side --force-conflicts --field-manager=boxauth-kube-up \
  -f "$ROOT/scripts/kube-issuer-discovery.yaml" >/dev/null

shopt -s nullglob
crd_files=("$CRDS"/*.yaml "$CRDS"/*.yml)
shopt -u nullglob
if ((${#crd_files[@]})); then
  crd_args=()
  for f in "${crd_files[@]}"; do crd_args+=(-f "$f"); done
  log "applying ${#crd_files[@]} CRD file(s) from $CRDS"
  kc apply --server-side --force-conflicts --field-manager=boxauth-kube-up "${crd_args[@]}" >&2
  kc wait --for=condition=Established --timeout="${TIMEOUT}s" "${crd_args[@]}" >&2
fi

OK=1
if ((${#STARTED[@]})); then
  log "cluster up: https://127.0.0.1:$PORT (started: ${STARTED[*]})"
else
  log "cluster already running: https://127.0.0.1:$PORT"
fi
echo "export KUBECONFIG=$KUBECONFIG_FILE"
