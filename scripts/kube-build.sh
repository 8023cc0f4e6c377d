#!/usr/bin/env bash
# kube-build.sh — build (once) the binaries of the local test cluster.
#
# Usage: scripts/kube-build.sh [--node]
#
# Builds kube-apiserver, etcd and kubectl from the wrapper Go module test/kube/
# (the versions are the ones pinned in test/kube/go.mod) and helm with
# `go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION`, into
#   ${BOXAUTH_KUBE_CACHE:-$HOME/.cache/boxauth/kube}/bin/
# Needs only `go` and the Go module proxy. A cold build takes several minutes
# (kube-apiserver is most of it); later runs build nothing: each binary has a
# stamp file <bin>/.<name>.version and is rebuilt only when it is missing, its
# stamp differs from the wanted version, or `<name> --version` disagrees.
# Progress goes to stderr; stdout stays empty. Concurrent runs are serialised
# with a lock file in the cache directory.
#
# --node also builds the node of the one-node cluster of scripts/cluster-up.sh:
# kubelet, kube-controller-manager, kube-scheduler and kube-proxy (same
# kubernetes version, each its own `go build` so its time is logged), CoreDNS
# from the wrapper module test/kube/coredns (only the plugins cluster DNS
# uses), and the small static programs of test/kube/{pause,probe,nsforward}
# (stamped with the hash of their source). About 8 minutes more when cold,
# after kube-apiserver (whose packages they share): CoreDNS 3, the kubelet 2,
# kube-controller-manager 1.5 (measured on 2 cores, another job running).
# BOXAUTH_KUBE_BUILD_JOBS=N passes `-p N` to go build (e.g. 1 on a shared
# machine).
set -euo pipefail

NODE=0
case ${1:-} in
  --node) NODE=1 ;;
  "") ;;
  *) printf 'usage: %s [--node]\n' "$0" >&2; exit 2 ;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MOD_DIR=$ROOT/test/kube
CACHE=${BOXAUTH_KUBE_CACHE:-$HOME/.cache/boxauth/kube}
BIN=$CACHE/bin
HELM_VERSION=v3.22.0

log() { printf 'kube-build: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
trap 'log "error: line $LINENO: \`$BASH_COMMAND\` failed (exit $?)"' ERR

command -v go >/dev/null || die "go is not on PATH"
[[ -f $MOD_DIR/go.mod ]] || die "missing $MOD_DIR/go.mod"

# Versions come from the wrapper module's go.mod.
mod_version() {
  awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$MOD_DIR/go.mod"
}
KUBE_VERSION=$(mod_version k8s.io/kubernetes)
ETCD_VERSION=$(mod_version go.etcd.io/etcd/server/v3)
[[ -n $KUBE_VERSION && -n $ETCD_VERSION ]] ||
  die "cannot read the k8s.io/kubernetes or etcd version from $MOD_DIR/go.mod"
COREDNS_VERSION=$(awk '$1 == "require" && $2 == "github.com/coredns/coredns" { print $3; exit }
  $1 == "github.com/coredns/coredns" && $2 ~ /^v/ { print $2; exit }' "$MOD_DIR/coredns/go.mod")
[[ -n $COREDNS_VERSION ]] || die "cannot read the CoreDNS version from $MOD_DIR/coredns/go.mod"
KUBE_MAJOR=${KUBE_VERSION#v}; KUBE_MAJOR=${KUBE_MAJOR%%.*}
KUBE_MINOR=${KUBE_VERSION#v*.}; KUBE_MINOR=${KUBE_MINOR%%.*}

# version_ok NAME VERSION: the binary exists, its stamp says VERSION and the
# binary itself reports VERSION.
version_ok() {
  local name=$1 want=$2 bin=$BIN/$1 out
  [[ -x $bin && -f $BIN/.$name.version ]] || return 1
  [[ $(<"$BIN/.$name.version") == "$want" ]] || return 1
  case $name in
    kube-apiserver | kubelet | kube-controller-manager | kube-scheduler | kube-proxy)
      out=$("$bin" --version 2>/dev/null) || return 1 ;;
    coredns) out=$("$bin" -version 2>/dev/null) || return 1 ;;
    # The hash of the source is the version: only the stamp can say it.
    pause | probe | nsforward) out=$want ;;
    kubectl) out=$("$bin" version --client 2>/dev/null) || return 1 ;;
    etcd) out=$("$bin" --version 2>/dev/null) || return 1 ;;
    helm) out=$("$bin" version --short 2>/dev/null) || return 1 ;;
  esac
  # kube-apiserver: "Kubernetes v1.35.4"; kubectl: "Client Version: v1.35.4";
  # etcd: "etcd Version: 3.6.5"; helm: "v3.22.0"; coredns: "CoreDNS-1.14.7".
  [[ $out == *"${want#v}"* ]]
}

wanted=("kube-apiserver $KUBE_VERSION" "kubectl $KUBE_VERSION" "etcd $ETCD_VERSION" "helm $HELM_VERSION")
NODE_BINS=(kubelet kube-proxy kube-scheduler kube-controller-manager)
if ((NODE)); then
  src_hash() { cat "$MOD_DIR/$1"/*.go | sha256sum | cut -c1-16; }
  PAUSE_VERSION=$(src_hash pause) PROBE_VERSION=$(src_hash probe) NSFORWARD_VERSION=$(src_hash nsforward)
  wanted+=("pause $PAUSE_VERSION" "probe $PROBE_VERSION" "nsforward $NSFORWARD_VERSION" "coredns $COREDNS_VERSION")
  for n in "${NODE_BINS[@]}"; do wanted+=("$n $KUBE_VERSION"); done
fi

# all_ok: every wanted binary is there in its version.
all_ok() {
  local pair
  for pair in "${wanted[@]}"; do
    # shellcheck disable=SC2086
    version_ok $pair || return 1
  done
}
ready() {
  log "ready in $BIN: kube-apiserver and kubectl $KUBE_VERSION, etcd $ETCD_VERSION, helm $HELM_VERSION"
  if ((NODE)); then
    log "and the node: kubelet, kube-controller-manager, kube-scheduler, kube-proxy $KUBE_VERSION, CoreDNS $COREDNS_VERSION, pause, probe, nsforward"
  fi
}
# Nothing to build: done without the lock, which a cold build (of the node,
# 8 minutes) holds while a cached binary of another run is all it needs.
# Binaries are replaced by rename, so a check never sees half of one.
if all_ok; then
  ready
  exit 0
fi

mkdir -p "$BIN"
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
  log "another kube-build.sh is running; waiting for it"
  flock 9
fi

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
TMP=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
jobs=()
if [[ -n ${BOXAUTH_KUBE_BUILD_JOBS:-} ]]; then jobs=(-p "$BOXAUTH_KUBE_BUILD_JOBS"); fi
kube_ldflags="-s -w"
kube_ldflags+=" -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
kube_ldflags+=" -X k8s.io/component-base/version.gitMajor=$KUBE_MAJOR"
kube_ldflags+=" -X k8s.io/component-base/version.gitMinor=$KUBE_MINOR"
kube_ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

# kube-apiserver, kubectl and etcd: one `go build` for whatever is missing, so
# the shared dependencies compile once.
pkgs=() names=()
for n in kube-apiserver kubectl; do
  if version_ok "$n" "$KUBE_VERSION"; then
    log "$n $KUBE_VERSION: cached"
  else
    pkgs+=("k8s.io/kubernetes/cmd/$n"); names+=("$n")
  fi
done
if version_ok etcd "$ETCD_VERSION"; then
  log "etcd $ETCD_VERSION: cached"
else
  pkgs+=(go.etcd.io/etcd/server/v3); names+=(etcd)
fi
if ((${#pkgs[@]})); then
  log "building ${names[*]} (kubernetes $KUBE_VERSION, etcd $ETCD_VERSION) (several minutes when cold)"
  start=$SECONDS
  mkdir -p "$TMP/out"
  (cd "$MOD_DIR" && go build "${jobs[@]}" -ldflags "$kube_ldflags" -o "$TMP/out/" "${pkgs[@]}") >&2
  # The etcd main package is the module root go.etcd.io/etcd/server/v3, so go
  # names its binary "server" (the major-version suffix is skipped).
  for f in server v3; do
    if [[ -f $TMP/out/$f ]]; then mv "$TMP/out/$f" "$TMP/out/etcd"; fi
  done
  for n in "${names[@]}"; do
    [[ -x $TMP/out/$n ]] || die "go build did not produce $n"
    mv -f "$TMP/out/$n" "$BIN/$n"   # rename: a running old binary keeps working
  done
  for n in "${names[@]}"; do
    if [[ $n == etcd ]]; then v=$ETCD_VERSION; else v=$KUBE_VERSION; fi
    printf '%s\n' "$v" >"$BIN/.$n.version"
  done
  log "built ${names[*]} in $((SECONDS - start)) s"
fi

if version_ok helm "$HELM_VERSION"; then
  log "helm $HELM_VERSION: cached"
else
  log "building helm $HELM_VERSION (about 2-3 minutes cold)"
  start=$SECONDS
  mkdir -p "$TMP/helm"
  # Same -X flags as helm's Makefile: its version, and the default Kubernetes
  # version of `helm template`/`helm lint` taken from the client-go it uses.
  helm_gomod=$(cd "$TMP" && go mod download -json "helm.sh/helm/v3@$HELM_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [[ -f $helm_gomod ]] || die "cannot download helm.sh/helm/v3@$HELM_VERSION"
  cg=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$helm_gomod")  # v0.M.P
  cg=${cg#v0.}; k8s_minor=${cg%%.*}
  hflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  hflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    hflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
  done
  # Outside any module (in $TMP), so test/kube/go.mod plays no part.
  (cd "$TMP" && GOBIN="$TMP/helm" go install -trimpath -ldflags "$hflags" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION") >&2
  mv -f "$TMP/helm/helm" "$BIN/helm"
  printf '%s\n' "$HELM_VERSION" >"$BIN/.helm.version"
  log "built helm in $((SECONDS - start)) s"
fi

# build_one NAME VERSION DIR PKG LDFLAGS: go build PKG in module DIR into
# $BIN/NAME unless version_ok, then stamp it.
build_one() {
  local name=$1 version=$2 dir=$3 pkg=$4 flags=$5 start=$SECONDS
  if version_ok "$name" "$version"; then
    log "$name $version: cached"
    return
  fi
  log "building $name $version"
  rm -rf "$TMP/one" && mkdir -p "$TMP/one"
  (cd "$dir" && go build "${jobs[@]}" -ldflags "$flags" -o "$TMP/one/$name" "$pkg") >&2
  mv -f "$TMP/one/$name" "$BIN/$name"
  printf '%s\n' "$version" >"$BIN/.$name.version"
  log "built $name in $((SECONDS - start)) s"
}

if ((NODE)); then
  # Small ones first.
  build_one pause "$PAUSE_VERSION" "$MOD_DIR" ./pause "-s -w"
  build_one probe "$PROBE_VERSION" "$MOD_DIR" ./probe "-s -w"
  build_one nsforward "$NSFORWARD_VERSION" "$MOD_DIR" ./nsforward "-s -w"
  build_one coredns "$COREDNS_VERSION" "$MOD_DIR/coredns" . "-s -w"
  for n in "${NODE_BINS[@]}"; do
    build_one "$n" "$KUBE_VERSION" "$MOD_DIR" "k8s.io/kubernetes/cmd/$n" "$kube_ldflags"
  done
fi

for pair in "${wanted[@]}"; do
  # shellcheck disable=SC2086
  version_ok $pair || die "$BIN/${pair%% *} does not report version ${pair#* } after the build"
done
ready
