#!/usr/bin/env bash
# envoy-protos.sh — copy Envoy's ext_authz v3 protos, and the files they import,
# from the npm package @grpc/grpc-js-xds into api/grpc/protos (see its README.md).
#
# Usage: scripts/envoy-protos.sh VERSION     (an @grpc/grpc-js-xds version, e.g. 1.14.1)
set -euo pipefail

VERSION=${1:?usage: scripts/envoy-protos.sh VERSION (of @grpc/grpc-js-xds)}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=$ROOT/api/grpc/protos
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

(cd "$TMP" && npm pack --silent "@grpc/grpc-js-xds@$VERSION" >/dev/null && tar xzf ./*.tgz)
DEPS=$TMP/package/deps
# Walk the imports from external_auth.proto; google/protobuf/* is protobufjs's own.
todo=(envoy/service/auth/v3/external_auth.proto)
declare -A seen=()
while ((${#todo[@]})); do
  file=${todo[-1]}
  unset 'todo[-1]'
  [[ -n ${seen[$file]:-} || $file == google/protobuf/* ]] && continue
  seen[$file]=1
  found=
  for dir in envoy-api googleapis protoc-gen-validate xds; do
    [[ -f $DEPS/$dir/$file ]] && found=$DEPS/$dir/$file && break
  done
  [[ -n $found ]] || { echo "envoy-protos: $file is imported but not in the package" >&2; exit 1; }
  mkdir -p "$DEST/$(dirname "$file")"
  cp "$found" "$DEST/$file"
  while read -r imported; do todo+=("$imported"); done < <(sed -n 's/^import \(public \)\{0,1\}"\([^"]*\)";.*/\2/p' "$found")
done
echo "envoy-protos: ${#seen[@]} files from @grpc/grpc-js-xds@$VERSION in $DEST" >&2
