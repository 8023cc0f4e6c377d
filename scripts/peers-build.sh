#!/usr/bin/env bash
# peers-build.sh — build (once) the peers that `make bench-peers` measures.
#
# Usage: scripts/peers-build.sh hydra|keycloak|opa|oauth2-proxy
#
#   hydra     Ory Hydra at the version pinned in test/bench/peers/hydra/go.mod, built
#             with `go build` from the Go module proxy (about 4 minutes cold).
#   keycloak  Keycloak $KEYCLOAK_VERSION, the server distribution
#             org.keycloak:keycloak-quarkus-dist (zip) from Maven Central through
#             mvn, unpacked and built for PostgreSQL (`kc.sh build`, as its
#             production guide does before `start --optimized`): 2-3 minutes cold.
#   opa       OPA's Envoy plugin (github.com/open-policy-agent/opa-envoy-plugin, the
#             version required in test/bench/peers/opa-envoy/go.mod): its
#             cmd/opa-envoy-plugin built with `go build` (a few minutes cold), run
#             as `opa run --server` with the envoy_ext_authz_grpc plugin. Where the
#             Go module proxy refuses it, OPA as a library answering ext_authz
#             (test/bench/peers/opa-extauthz) stands in, and OPA_KIND says so.
#   oauth2-proxy  oauth2-proxy $OAUTH2_PROXY_VERSION, `go install`ed from the Go
#             module proxy (under a minute cold).
#
# Into ${BOXAUTH_PEERS_CACHE:-$HOME/.cache/boxauth/peers}; later runs build
# nothing: each peer has a stamp file and is rebuilt only when it is missing or
# its stamp differs from what is wanted. On success stdout gets KEY=VALUE lines
# for bench-peers (HYDRA=<binary>; KEYCLOAK_HOME=<dir> and JAVA_HOME=<jdk>;
# OPA=<binary>, OPA_VERSION and OPA_KIND (envoy-plugin or stand-in); OAUTH2_PROXY=<binary>);
# progress goes to stderr. Each peer has a lock of its own, so two runs do not
# build the same thing at once.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${BOXAUTH_PEERS_CACHE:-$HOME/.cache/boxauth/peers}
KEYCLOAK_VERSION=26.7.3
OAUTH2_PROXY_VERSION=v7.15.6
# Keycloak 26.7 supports OpenJDK 17, 21 and 25 and suggests the newest.
JDK_MAJORS=(25 21 17)
# Pinned, not the default of whichever Maven is installed.
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

PEER=${1:-}
log() { printf 'peers-build %s: %s\n' "$PEER" "$*" >&2; }
die() { log "error: $*"; exit 1; }
trap 'log "error: line $LINENO: \`$BASH_COMMAND\` failed (exit $?)"' ERR

# apt_install PACKAGE…: Debian's packages this needs and the machine lacks.
apt_install() {
  log "installing Debian's $*"
  "$ROOT/scripts/apt-install.sh" "$@" >&2
}

# The lock is held until the script exits; a run that waits says so.
lock() {
  exec 9>"$CACHE/.$PEER.lock"
  if ! flock -n 9; then
    log "another peers-build.sh is building $PEER; waiting for it"
    flock 9
  fi
}

build_hydra() {
  command -v go >/dev/null || die "go is not on PATH (Hydra is built from the Go module proxy)"
  local mod=$ROOT/test/bench/peers/hydra version dir bin stamp
  version=$(awk '$1 == "github.com/ory/hydra/v2" && $2 ~ /^v/ { print $2; exit }' "$mod/go.mod")
  [[ -n $version ]] || die "cannot read Hydra's version from $mod/go.mod"
  dir=$CACHE/hydra-$version
  bin=$dir/hydra
  stamp="$version $(go env GOVERSION)"
  if [[ -x $bin && -f $dir/.stamp && $(<"$dir/.stamp") == "$stamp" ]]; then
    log "Hydra $version: cached"
  else
    log "building Ory Hydra $version with $(go env GOVERSION) (about 4 minutes cold)"
    local start=$SECONDS tmp
    mkdir -p "$dir"
    tmp=$(mktemp -d "$dir/.build.XXXXXX")
    # Hydra's release builds stamp their version the same way (its Makefile).
    local ldflags="-s -w -X github.com/ory/hydra/v2/driver/config.Version=$version"
    ldflags+=" -X github.com/ory/hydra/v2/driver/config.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if ! (cd "$mod" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "$ldflags" \
      -o "$tmp/hydra" github.com/ory/hydra/v2) >&2; then
      rm -rf "$tmp"
      die "go build of Hydra $version failed"
    fi
    mv -f "$tmp/hydra" "$bin"
    rm -rf "$tmp"
    printf '%s\n' "$stamp" >"$dir/.stamp"
    log "built Hydra $version in $((SECONDS - start)) s"
  fi
  [[ $("$bin" version 2>/dev/null) == *"Version:"*"$version"* ]] || die "$bin does not report version $version"
  printf 'HYDRA=%s\n' "$bin"
}

# The JDK for Keycloak: $BENCH_PEERS_JAVA_HOME, else the newest supported one
# under /usr/lib/jvm or on PATH, else Debian's OpenJDK 17 (installed here).
java_major() { # JDK home -> its major version, or nothing
  sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release" 2>/dev/null
}
find_jdk() {
  if [[ -n ${BENCH_PEERS_JAVA_HOME:-} ]]; then
    [[ -x $BENCH_PEERS_JAVA_HOME/bin/java ]] || die "BENCH_PEERS_JAVA_HOME=$BENCH_PEERS_JAVA_HOME has no bin/java"
    printf '%s\n' "$BENCH_PEERS_JAVA_HOME"
    return
  fi
  local candidates=() home major
  for home in /usr/lib/jvm/*/; do candidates+=("${home%/}"); done
  if command -v java >/dev/null; then
    home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
    candidates+=("$home")
  fi
  for major in "${JDK_MAJORS[@]}"; do
    for home in "${candidates[@]}"; do
      if [[ -x $home/bin/java && $(java_major "$home") == "$major" ]]; then
        printf '%s\n' "$home"
        return
      fi
    done
  done
  log "no JDK ${JDK_MAJORS[*]} found"
  apt_install openjdk-17-jre-headless
  printf '%s\n' /usr/lib/jvm/java-17-openjdk-amd64
}

build_keycloak() {
  local jdk home=$CACHE/keycloak-$KEYCLOAK_VERSION
  # What `kc.sh build` fixes into the distribution; `start --optimized` needs the same.
  local options=(--db=postgres --health-enabled=true)
  local stamp="$KEYCLOAK_VERSION ${options[*]}"
  jdk=$(find_jdk)
  log "Java: $jdk ($("$jdk/bin/java" -version 2>&1 | head -1))"
  if [[ -x $home/bin/kc.sh && -f $home/.stamp && $(<"$home/.stamp") == "$stamp" ]]; then
    log "Keycloak $KEYCLOAK_VERSION: cached"
  else
    local start=$SECONDS tmp
    # mvn: the Keycloak distribution comes from Maven Central
    command -v mvn >/dev/null || apt_install maven
    command -v unzip >/dev/null || apt_install unzip
    tmp=$(mktemp -d "$CACHE/.keycloak.XXXXXX")
    log "fetching org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION (zip, 170 MB) from Maven Central"
    # mvn's output only when it fails: even quiet, it prints colour codes. A local repository of
    # its own, under this script's lock: Maven 3.8 (Debian's) does not lock ~/.m2 against another
    # mvn of the machine writing it at the same time (its named locks came with Maven 3.9).
    if ! mvn -B -q --strict-checksums "-Dmaven.repo.local=$CACHE/m2" "$DEPENDENCY_PLUGIN:copy" \
      "-Dartifact=org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:zip" "-DoutputDirectory=$tmp" >"$tmp/mvn.log" 2>&1; then
      cat "$tmp/mvn.log" >&2
      rm -rf "$tmp"
      die "mvn could not fetch org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION"
    fi
    unzip -q "$tmp/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip" -d "$tmp"
    rm -rf "$home"
    mv "$tmp/keycloak-$KEYCLOAK_VERSION" "$home"
    rm -rf "$tmp"
    # Built where it runs from; without the stamp, a build cut short is done again.
    log "kc.sh build ${options[*]} (about a minute)"
    JAVA_HOME=$jdk "$home/bin/kc.sh" build "${options[@]}" >&2 || die "kc.sh build failed"
    printf '%s\n' "$stamp" >"$home/.stamp"
    log "Keycloak $KEYCLOAK_VERSION ready in $((SECONDS - start)) s"
  fi
  printf 'KEYCLOAK_HOME=%s\nJAVA_HOME=%s\n' "$home" "$jdk"
}

# go_built WHAT DIR NAME STAMP COMMAND…: DIR/NAME, built by COMMAND (run in a fresh
# directory, $OUT, where it leaves NAME) unless it is there and DIR/.stamp is STAMP.
go_built() {
  local what=$1 dir=$2 name=$3 stamp=$4
  shift 4
  command -v go >/dev/null || die "go is not on PATH ($what is built from the Go module proxy)"
  if [[ -x $dir/$name && -f $dir/.stamp && $(<"$dir/.stamp") == "$stamp" ]]; then
    log "$what: cached"
    return
  fi
  log "building $what with $(go env GOVERSION) (a minute or so cold)"
  local start=$SECONDS tmp
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  if ! (export OUT=$tmp CGO_ENABLED=0 GOFLAGS=-buildvcs=false && cd "$tmp" && "$@") >&2; then
    rm -rf "$tmp"
    die "building $what failed"
  fi
  mv -f "$tmp/$name" "$dir/$name"
  rm -rf "$tmp"
  printf '%s\n' "$stamp" >"$dir/.stamp"
  log "built $what in $((SECONDS - start)) s"
}

# OPA's Envoy plugin, as its users run it (opa_envoy: the plugin's cmd/opa-envoy-plugin, OPA's
# command with envoy_ext_authz_grpc registered), at the version test/bench/peers/opa-envoy/go.mod
# requires: the newest the Go module proxy here serves (it refuses the version list, and some
# exact versions: v1.15.2-envoy was served, v1.16 to v1.22 were not). Where it is refused, the
# library stand-in of test/bench/peers/opa-extauthz instead, and OPA_KIND says which.
build_opa_envoy() {
  local mod=$ROOT/test/bench/peers/opa-envoy version digest dir
  version=$(awk '$1 == "github.com/open-policy-agent/opa-envoy-plugin" && $2 ~ /^v/ { print $2; exit }' "$mod/go.mod")
  [[ -n $version ]] || die "cannot read opa-envoy-plugin's version from $mod/go.mod"
  digest=$(cat "$mod"/go.mod "$mod"/go.sum | sha256sum | cut -c1-16)
  dir=$CACHE/opa-envoy-$version
  # shellcheck disable=SC2016 # $OUT is go_built's, expanded where the command runs
  go_built "OPA-Envoy $version ($digest)" "$dir" opa_envoy "$version $digest $(go env GOVERSION)" \
    bash -c 'cd "$1" && go build -trimpath -ldflags "-s -w" -o "$OUT/opa_envoy" github.com/open-policy-agent/opa-envoy-plugin/cmd/opa-envoy-plugin' _ "$mod" ||
    return 1
  "$dir/opa_envoy" version >/dev/null 2>&1 || die "$dir/opa_envoy does not run"
  printf 'OPA=%s\nOPA_VERSION=%s\nOPA_KIND=envoy-plugin\n' "$dir/opa_envoy" "$version"
}

build_opa() {
  # go_built dies on a failed build: a subshell keeps that to the plugin's attempt.
  local out
  if out=$(build_opa_envoy); then
    printf '%s\n' "$out"
    return
  fi
  log "OPA's Envoy plugin could not be built (the Go module proxy refuses it?): the library stand-in instead"
  local mod=$ROOT/test/bench/peers/opa-extauthz version digest dir
  version=$(awk '$1 == "github.com/open-policy-agent/opa" && $2 ~ /^v/ { print $2; exit }' "$mod/go.mod")
  [[ -n $version ]] || die "cannot read OPA's version from $mod/go.mod"
  digest=$(cat "$mod"/go.mod "$mod"/go.sum "$mod"/*.go | sha256sum | cut -c1-16)
  dir=$CACHE/opa-$version
  # shellcheck disable=SC2016 # $OUT is go_built's, expanded where the command runs
  go_built "OPA $version (opa-extauthz $digest)" "$dir" opa-extauthz "$version $digest $(go env GOVERSION)" \
    bash -c 'cd "$1" && go build -trimpath -ldflags "-s -w" -o "$OUT/opa-extauthz" .' _ "$mod"
  printf 'OPA=%s\nOPA_VERSION=%s\nOPA_KIND=stand-in\n' "$dir/opa-extauthz" "$version"
}

build_oauth2_proxy() {
  local dir=$CACHE/oauth2-proxy-$OAUTH2_PROXY_VERSION
  # Outside any module (in $OUT), so no go.mod of the repository plays a part. Its release
  # builds stamp the version the same way (its Makefile).
  # shellcheck disable=SC2016 # $OUT is go_built's, expanded where the command runs
  go_built "oauth2-proxy $OAUTH2_PROXY_VERSION" "$dir" oauth2-proxy "$OAUTH2_PROXY_VERSION $(go env GOVERSION)" \
    bash -c 'GOBIN=$OUT go install -trimpath -ldflags "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=$1" \
      "github.com/oauth2-proxy/oauth2-proxy/v7@$1"' _ "$OAUTH2_PROXY_VERSION"
  [[ $("$dir/oauth2-proxy" --version 2>&1) == *"${OAUTH2_PROXY_VERSION}"* ]] || die "$dir/oauth2-proxy does not report version $OAUTH2_PROXY_VERSION"
  printf 'OAUTH2_PROXY=%s\n' "$dir/oauth2-proxy"
}

mkdir -p "$CACHE"
case $PEER in
  hydra) lock; build_hydra ;;
  keycloak) lock; build_keycloak ;;
  opa) lock; build_opa ;;
  oauth2-proxy) lock; build_oauth2_proxy ;;
  *) PEER=usage; die "usage: scripts/peers-build.sh hydra|keycloak|opa|oauth2-proxy" ;;
esac
