#!/usr/bin/env bash
# kube-build.sh — build (once) the binaries of the local test cluster.
#
# Usage: scripts/kube-build.sh
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
set -euo pipefail

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
KUBE_MAJOR=${KUBE_VERSION#v}; KUBE_MAJOR=${KUBE_MAJOR%%.*}
KUBE_MINOR=${KUBE_VERSION#v*.}; KUBE_MINOR=${KUBE_MINOR%%.*}

# version_ok NAME VERSION: the binary exists, its stamp says VERSION and the
# binary itself reports VERSION.
version_ok() {
  local name=$1 want=$2 bin=$BIN/$1 out
  [[ -x $bin && -f $BIN/.$name.version ]] || return 1
  [[ $(<"$BIN/.$name.version") == "$want" ]] || return 1
  case $name in
    kube-apiserver) out=$("$bin" --version 2>/dev/null) || return 1 ;;
    kubectl) out=$("$bin" version --client 2>/dev/null) || return 1 ;;
    etcd) out=$("$bin" --version 2>/dev/null) || return 1 ;;
    helm) out=$("$bin" version --short 2>/dev/null) || return 1 ;;
  esac
  # kube-apiserver: "Kubernetes v1.35.4"; kubectl: "Client Version: v1.35.4";
  # etcd: "etcd Version: 3.6.5"; helm: "v3.22.0".
  [[ $out == *"${want#v}"* ]]
}

mkdir -p "$BIN"
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
  log "another kube-build.sh is running; waiting for it"
  flock 9
fi

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
TMP=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

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
  ldflags="-s -w"
  ldflags+=" -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=$KUBE_MAJOR"
  ldflags+=" -X k8s.io/component-base/version.gitMinor=$KUBE_MINOR"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
  mkdir -p "$TMP/out"
  (cd "$MOD_DIR" && go build -ldflags "$ldflags" -o "$TMP/out/" "${pkgs[@]}") >&2
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

for pair in "kube-apiserver $KUBE_VERSION" "kubectl $KUBE_VERSION" "etcd $ETCD_VERSION" "helm $HELM_VERSION"; do
  # shellcheck disable=SC2086
  version_ok $pair || die "$BIN/${pair%% *} does not report version ${pair#* } after the build"
done
log "ready in $BIN: kube-apiserver and kubectl $KUBE_VERSION, etcd $ETCD_VERSION, helm $HELM_VERSION"
