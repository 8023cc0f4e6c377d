#!/usr/bin/env bash
# test-tools-build.sh — build (once) the tools the operator's, gateways' and clients' tests run.
#
# Usage: scripts/test-tools-build.sh [--python | --without-spire | --spire]
#
# --python builds only the Python virtual environment (below; seconds), under a
# lock of its own: what the integration tests need, while a full build of the Go
# tools may still run (.ci/run starts one in the background).
# --without-spire builds all but SPIRE; --spire only SPIRE, under a lock of its own.
# SPIRE is the largest build (about 20 CPU-minutes cold: 10 minutes on two idle
# cores) and only the suite's last part (the SPIRE journey) needs it, so `make test` waits for it last
# and .ci/run builds it last, at the lowest priority, on the CPU the suite leaves idle.
#
# Builds, into ${BOXAUTH_TOOLS_CACHE:-$HOME/.cache/boxauth/tools}/bin/:
#   kstatus   the helper of test/kstatus/ (sigs.k8s.io/cli-utils/pkg/kstatus, the
#             versions pinned in its go.mod): the status Flux computes for an object;
#   promtool  Prometheus's own rule checker, `go install`ed at $PROMETHEUS_VERSION
#             (the Go module version of Prometheus 3.16.0), without the service
#             discovery plugins (the remove_all_sd tag: `check rules` needs none);
#   extauthz  test/extauthz, Envoy's ext_authz gRPC client;
#   otelcol   test/otelcol, an OpenTelemetry Collector of the Collector's own modules (the release
#             its go.mod pins): the OTLP receiver and exporters the traces' tests read spans back through;
#   traefik   the gateway tests' Traefik, from its Go module at $TRAEFIK_VERSION;
#   spire-server, spire-agent  SPIRE v1.13.3 (test/e2e/spire.test.ts, the JWT-SVID journey): the Go
#             tools of test/spire/go.mod (`go get -tool ...@$SPIRE_VERSION`), `go install`ed from there,
#             without cgo (its datastore is the tests' PostgreSQL, not SQLite); stamped with a digest of test/spire/;
#   actionlint the checker of GitHub Actions workflows (test/e2e/release.test.ts runs it over
#             .github/workflows/), `go install`ed from its module at $ACTIONLINT_VERSION;
# CloudNativePG's CRDs (config/crd/bases of its Go module at $CNPG_VERSION, for
# test/e2e/operator/cnpg.ts) into $CACHE/cnpg-$CNPG_VERSION, with $CACHE/cnpg a
# link to the current one;
# and the Python virtual environment of test/py-client (requests-oauth2client, for
# test/e2e/python-client.test.ts; scim2-tester, for test/integration/scim-compliance.test.ts;
# pysaml2, the SAML service provider test/py-saml-sp/, which runs Debian's xmlsec1: make test installs it)
# at $CACHE/py-<digest of its requirements.txt>, with $CACHE/py a link to the current one.
# Needs `go` with the Go module proxy, and `python3` with PyPI; a cold build takes
# a few minutes (promtool is most of it). As scripts/kube-build.sh does: each
# binary has a stamp file <bin>/.<name>.version and is rebuilt only when it is
# missing or the stamp differs (kstatus's version is a digest of test/kstatus/),
# stdout stays empty, and concurrent runs are serialised with a lock file.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KSTATUS_DIR=$ROOT/test/kstatus
EXTAUTHZ_DIR=$ROOT/test/extauthz
OTELCOL_DIR=$ROOT/test/otelcol
SPIRE_DIR=$ROOT/test/spire
PY_REQUIREMENTS=$ROOT/test/py-client/requirements.txt
CACHE=${BOXAUTH_TOOLS_CACHE:-$HOME/.cache/boxauth/tools}
BIN=$CACHE/bin
PROMETHEUS_VERSION=v0.316.0
TRAEFIK_VERSION=v3.6.12
ACTIONLINT_VERSION=v1.7.12
# The SPIRE release test/spire/go.mod pins (its tool lines); the stamp is a digest of that directory.
SPIRE_VERSION=v1.13.3
# The newest CloudNativePG release, supported on the Kubernetes the tests run (1.35; 1.30 supports 1.34 to 1.36), whose
# Cluster has spec.postgresql.synchronous.failoverQuorum as a field (1.28 on; before, an alpha annotation).
CNPG_VERSION=v1.30.0
CNPG_DIR=$CACHE/cnpg-$CNPG_VERSION

log() { printf 'test-tools-build: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
trap 'log "error: line $LINENO: \`$BASH_COMMAND\` failed (exit $?)"' ERR

PYTHON_ONLY=0 GO_TOOLS=1 SPIRE=1
case ${1:-} in
  --python) PYTHON_ONLY=1 ;;
  --without-spire) SPIRE=0 ;;
  --spire) GO_TOOLS=0 ;;
  "") ;;
  *) printf 'usage: %s [--python | --without-spire | --spire]\n' "$0" >&2; exit 2 ;;
esac
((PYTHON_ONLY)) || command -v go >/dev/null || die "go is not on PATH"
command -v python3 >/dev/null || die "python3 is not on PATH"
[[ -f $KSTATUS_DIR/go.mod ]] || die "missing $KSTATUS_DIR/go.mod"
[[ -f $PY_REQUIREMENTS ]] || die "missing $PY_REQUIREMENTS"

KSTATUS_VERSION=$(cat "$KSTATUS_DIR"/go.mod "$KSTATUS_DIR"/go.sum "$KSTATUS_DIR"/*.go | sha256sum | cut -c1-16)
EXTAUTHZ_VERSION=$(cat "$EXTAUTHZ_DIR"/go.mod "$EXTAUTHZ_DIR"/go.sum "$EXTAUTHZ_DIR"/*.go | sha256sum | cut -c1-16)
OTELCOL_VERSION=$(cat "$OTELCOL_DIR"/go.mod "$OTELCOL_DIR"/go.sum "$OTELCOL_DIR"/*.go | sha256sum | cut -c1-16)
# The Collector release test/otelcol/go.mod pins, which the binary reports (--version).
OTELCOL_RELEASE=$(sed -n 's|^[[:space:]]*go.opentelemetry.io/collector/otelcol \(v[^ ]*\)$|\1|p' "$OTELCOL_DIR/go.mod")
SPIRE_STAMP=$SPIRE_VERSION-$(cat "$SPIRE_DIR"/go.mod "$SPIRE_DIR"/go.sum | sha256sum | cut -c1-16)
# test/support/py-client.ts computes the same name: keep the two in step.
PY_VERSION=$(sha256sum "$PY_REQUIREMENTS" | cut -c1-16)
PY_VENV=$CACHE/py-$PY_VERSION
# What the venv must import (test/py-client/requirements.in's libraries).
PY_IMPORTS='import requests_oauth2client, scim2_tester, saml2'

# stamped NAME VERSION: the binary exists and was built at VERSION.
stamped() {
  [[ -x $BIN/$1 && -f $BIN/.$1.version && $(<"$BIN/.$1.version") == "$2" ]]
}

# The venv is built under a lock of its own, so that --python does not wait for
# the Go tools of another run.
build_venv() {
  exec 8>"$CACHE/.py.lock"
  flock 8
  # The venv is built where it stays (a venv records its own path) and stamped last:
  # one without the stamp, or whose Python no longer runs the library (python3 was
  # upgraded under it), is half-built or stale and is built again.
  if [[ -f $PY_VENV/.complete ]] && "$PY_VENV/bin/python" -c "$PY_IMPORTS" 2>/dev/null; then
    log "python venv $PY_VERSION: cached"
  else
    log "building the python venv of test/py-client ($PY_VERSION)"
    start=$SECONDS
    rm -rf "$PY_VENV"
    python3 -m venv "$PY_VENV" >&2 || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    # Every package pinned with its hashes: pip refuses anything else, dependencies included.
    "$PY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
      --require-hashes -r "$PY_REQUIREMENTS" >&2
    "$PY_VENV/bin/python" -c "$PY_IMPORTS" || die "$PY_IMPORTS: fails in $PY_VENV"
    touch "$PY_VENV/.complete"
    log "built the python venv in $((SECONDS - start)) s"
  fi
  ln -sfn "py-$PY_VERSION" "$CACHE/py.new" && mv -fT "$CACHE/py.new" "$CACHE/py"
  exec 8>&-
}

# SPIRE under a lock of its own: a build of the other tools does not wait for it, nor it for them.
build_spire() {
  exec 7>"$CACHE/.spire.lock"
  if ! flock -n 7; then
    log "another build of spire is running; waiting for it"
    flock 7
  fi
  if stamped spire-server "$SPIRE_STAMP" && stamped spire-agent "$SPIRE_STAMP"; then
    log "spire $SPIRE_STAMP: cached"
  else
    log "building spire-server and spire-agent $SPIRE_VERSION (about 10 minutes cold on two idle cores)"
    start=$SECONDS
    grep -q "github.com/spiffe/spire $SPIRE_VERSION" "$SPIRE_DIR/go.mod" || die "test/spire/go.mod does not pin github.com/spiffe/spire $SPIRE_VERSION"
    (cd "$SPIRE_DIR" && GOBIN="$TMP" go install -trimpath -ldflags "-s -w" \
      github.com/spiffe/spire/cmd/spire-server github.com/spiffe/spire/cmd/spire-agent) >&2
    for tool in spire-server spire-agent; do
      [[ $("$TMP/$tool" --version 2>&1) == *"${SPIRE_VERSION#v}"* ]] || die "$tool does not report version $SPIRE_VERSION"
      mv -f "$TMP/$tool" "$BIN/$tool"
      printf '%s\n' "$SPIRE_STAMP" >"$BIN/.$tool.version"
    done
    log "built spire in $((SECONDS - start)) s"
  fi
  exec 7>&-
}

mkdir -p "$BIN"
if ((PYTHON_ONLY)); then
  build_venv
  log "ready: python venv $PY_VENV"
  exit 0
fi
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
TMP=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
if ! ((GO_TOOLS)); then
  build_spire
  log "ready in $BIN: spire $SPIRE_STAMP"
  exit 0
fi
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
  log "another test-tools-build.sh is running; waiting for it"
  flock 9
fi

if stamped kstatus "$KSTATUS_VERSION"; then
  log "kstatus $KSTATUS_VERSION: cached"
else
  log "building kstatus (test/kstatus, $KSTATUS_VERSION)"
  start=$SECONDS
  (cd "$KSTATUS_DIR" && go build -trimpath -ldflags "-s -w" -o "$TMP/kstatus" .) >&2
  mv -f "$TMP/kstatus" "$BIN/kstatus" # rename: a running old binary keeps working
  printf '%s\n' "$KSTATUS_VERSION" >"$BIN/.kstatus.version"
  log "built kstatus in $((SECONDS - start)) s"
fi

if stamped extauthz "$EXTAUTHZ_VERSION"; then
  log "extauthz $EXTAUTHZ_VERSION: cached"
else
  log "building extauthz (test/extauthz, $EXTAUTHZ_VERSION)"
  start=$SECONDS
  (cd "$EXTAUTHZ_DIR" && go build -trimpath -ldflags "-s -w" -o "$TMP/extauthz" .) >&2
  mv -f "$TMP/extauthz" "$BIN/extauthz"
  printf '%s\n' "$EXTAUTHZ_VERSION" >"$BIN/.extauthz.version"
  log "built extauthz in $((SECONDS - start)) s"
fi

if stamped otelcol "$OTELCOL_VERSION"; then
  log "otelcol $OTELCOL_VERSION: cached"
else
  log "building otelcol (test/otelcol, the Collector $OTELCOL_RELEASE; a few minutes cold)"
  start=$SECONDS
  [[ -n $OTELCOL_RELEASE ]] || die "test/otelcol/go.mod pins no go.opentelemetry.io/collector/otelcol"
  (cd "$OTELCOL_DIR" && go build -trimpath -ldflags "-s -w -X main.version=$OTELCOL_RELEASE" -o "$TMP/otelcol" .) >&2
  [[ $("$TMP/otelcol" --version 2>/dev/null) == *"$OTELCOL_RELEASE"* ]] || die "otelcol does not report version $OTELCOL_RELEASE"
  mv -f "$TMP/otelcol" "$BIN/otelcol"
  printf '%s\n' "$OTELCOL_VERSION" >"$BIN/.otelcol.version"
  log "built otelcol in $((SECONDS - start)) s"
fi

if stamped promtool "$PROMETHEUS_VERSION"; then
  log "promtool $PROMETHEUS_VERSION: cached"
else
  log "building promtool $PROMETHEUS_VERSION (a few minutes cold)"
  start=$SECONDS
  # Prometheus 3.x is published as Go module v0.3MM.P for release 3.MM.P; promtool --version says the latter.
  minor=${PROMETHEUS_VERSION#v0.3}; minor=${minor%%.*}; minor=$((10#$minor))
  release=3.$minor.${PROMETHEUS_VERSION##*.}
  # Outside any module (in $TMP), so no go.mod of the repository plays a part.
  (cd "$TMP" && GOBIN="$TMP" go install -trimpath -tags remove_all_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release" \
    "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION") >&2
  "$TMP/promtool" --version >/dev/null || die "promtool does not run"
  mv -f "$TMP/promtool" "$BIN/promtool"
  printf '%s\n' "$PROMETHEUS_VERSION" >"$BIN/.promtool.version"
  log "built promtool in $((SECONDS - start)) s"
fi

if stamped traefik "$TRAEFIK_VERSION"; then
  log "traefik $TRAEFIK_VERSION: cached"
else
  log "building traefik $TRAEFIK_VERSION (a few minutes cold)"
  start=$SECONDS
  # The module cache is read-only: build from there, writing only into $TMP.
  src=$(cd "$TMP" && GOFLAGS=-mod=mod go mod download -json "github.com/traefik/traefik/v3@$TRAEFIK_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $src ]] || die "go mod download of traefik $TRAEFIK_VERSION gave no source directory"
  # Traefik's release builds stamp the version the same way (its Makefile).
  (cd "$src" && go build -trimpath -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION" \
    -o "$TMP/traefik" ./cmd/traefik) >&2
  [[ $("$TMP/traefik" version 2>/dev/null) == *"${TRAEFIK_VERSION#v}"* ]] || die "traefik does not report version $TRAEFIK_VERSION"
  mv -f "$TMP/traefik" "$BIN/traefik"
  printf '%s\n' "$TRAEFIK_VERSION" >"$BIN/.traefik.version"
  log "built traefik in $((SECONDS - start)) s"
fi

if stamped actionlint "$ACTIONLINT_VERSION"; then
  log "actionlint $ACTIONLINT_VERSION: cached"
else
  log "building actionlint $ACTIONLINT_VERSION"
  start=$SECONDS
  # Its release builds stamp the version the same way (.goreleaser.yaml); outside any module, as promtool.
  (cd "$TMP" && GOBIN="$TMP" go install -trimpath \
    -ldflags "-s -w -X github.com/rhysd/actionlint.version=$ACTIONLINT_VERSION" \
    "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION") >&2
  [[ $("$TMP/actionlint" -version 2>/dev/null | head -n 1) == "$ACTIONLINT_VERSION" ]] || die "actionlint does not report version $ACTIONLINT_VERSION"
  mv -f "$TMP/actionlint" "$BIN/actionlint"
  printf '%s\n' "$ACTIONLINT_VERSION" >"$BIN/.actionlint.version"
  log "built actionlint in $((SECONDS - start)) s"
fi

if [[ -f $CNPG_DIR/.complete ]]; then
  log "cloudnative-pg CRDs $CNPG_VERSION: cached"
else
  log "fetching the CRDs of cloudnative-pg $CNPG_VERSION (its Go module)"
  src=$(cd "$TMP" && GOFLAGS=-mod=mod go mod download -json "github.com/cloudnative-pg/cloudnative-pg@$CNPG_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $src/config/crd/bases ]] || die "go mod download of cloudnative-pg $CNPG_VERSION gave no config/crd/bases"
  mkdir -p "$TMP/cnpg"
  cp "$src"/config/crd/bases/postgresql.cnpg.io_*.yaml "$TMP/cnpg/"
  chmod 644 "$TMP"/cnpg/*.yaml # the module cache's files are read-only
  touch "$TMP/cnpg/.complete"
  rm -rf "$CNPG_DIR"
  mv "$TMP/cnpg" "$CNPG_DIR"
fi
ln -sfn "cnpg-$CNPG_VERSION" "$CACHE/cnpg.new" && mv -fT "$CACHE/cnpg.new" "$CACHE/cnpg"

build_venv
exec 9>&-
((SPIRE)) && build_spire

log "ready in $BIN: kstatus $KSTATUS_VERSION, extauthz $EXTAUTHZ_VERSION, otelcol $OTELCOL_VERSION, promtool $PROMETHEUS_VERSION, traefik $TRAEFIK_VERSION, actionlint $ACTIONLINT_VERSION$( ((SPIRE)) && echo ", spire $SPIRE_STAMP"); python venv $PY_VENV; cloudnative-pg CRDs $CNPG_DIR"
