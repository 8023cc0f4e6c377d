#!/usr/bin/env bash
# trace-screenshot.sh — the screenshot of docs/operations/traces.md: a box's journey (a token issued,
# a gateway's request refused) in Zipkin's UI. A maintainer runs it (make docs-screenshots) after
# changing the spans; make test does not.
#
# Usage: scripts/trace-screenshot.sh   (writes docs/screenshots/traces-zipkin.png)
#
# The box exports over OTLP to an OpenTelemetry Collector with the contrib Zipkin exporter
# (test/otelcol-zipkin, built here from the Go module proxy into
# ${BOXAUTH_TOOLS_CACHE:-$HOME/.cache/boxauth/tools}/bin/otelcol-zipkin, stamped with a digest of
# its directory), which hands the spans to Zipkin's server (its executable jar from Maven Central,
# fetched with mvn into ~/.m2 when missing; it needs Java 17). Zipkin, not Jaeger: Jaeger's UI
# is published on no registry this project builds from. The rest is test/screenshots/traces.ts.
# Needs make build and Debian's chromium (make chromium); every process it starts, it stops.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZIPKIN_VERSION=3.4.2
ZIPKIN_JAR=$HOME/.m2/repository/io/zipkin/zipkin-server/$ZIPKIN_VERSION/zipkin-server-$ZIPKIN_VERSION-exec.jar
OTELCOL_DIR=$ROOT/test/otelcol-zipkin
BIN=${BOXAUTH_TOOLS_CACHE:-$HOME/.cache/boxauth/tools}/bin
OTELCOL=$BIN/otelcol-zipkin

log() { printf 'trace-screenshot: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ -f $ROOT/dist/test/screenshots/traces.js ]] || die "run make build first"
command -v java >/dev/null || die "java (17 or later) is not on PATH"

if [[ ! -f $ZIPKIN_JAR ]]; then
  log "fetching zipkin-server $ZIPKIN_VERSION from Maven Central"
  mvn -q dependency:get -Dartifact="io.zipkin:zipkin-server:$ZIPKIN_VERSION:jar:exec" -Dtransitive=false
  [[ -f $ZIPKIN_JAR ]] || die "mvn did not fetch $ZIPKIN_JAR"
fi

stamp=$(cat "$OTELCOL_DIR"/go.mod "$OTELCOL_DIR"/go.sum "$OTELCOL_DIR"/*.go | sha256sum | cut -c1-16)
if [[ ! -x $OTELCOL || $(cat "$BIN/.otelcol-zipkin.version" 2>/dev/null) != "$stamp" ]]; then
  release=$(sed -n 's|^[[:space:]]*go.opentelemetry.io/collector/otelcol \(v[^ ]*\)$|\1|p' "$OTELCOL_DIR/go.mod")
  log "building otelcol-zipkin (test/otelcol-zipkin, the Collector $release; a few minutes cold)"
  mkdir -p "$BIN"
  (cd "$OTELCOL_DIR" && CGO_ENABLED=0 go build -buildvcs=false -trimpath -ldflags "-s -w -X main.version=$release" -o "$OTELCOL.new" .)
  mv -f "$OTELCOL.new" "$OTELCOL"
  printf '%s\n' "$stamp" >"$BIN/.otelcol-zipkin.version"
fi

cd "$ROOT"
node dist/test/screenshots/traces.js "$OTELCOL" "$ZIPKIN_JAR"
cp test-artifacts/traces-zipkin.png docs/screenshots/traces-zipkin.png
log "wrote docs/screenshots/traces-zipkin.png"
