#!/usr/bin/env bash
# npm-package.sh — boxauth's npm package of one version, as the release ships it.
#
# Usage: scripts/npm-package.sh <version> <directory>
#
# Writes <directory>/boxauth-<version>.tgz (npm pack) from staging copies of this checkout's dist/
# (compile it first: make build) and of what package.json's "files" names; no tracked file changes.
# scripts/release.sh ships it; scripts/image-build.sh installs it into the image.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ $# -eq 2 ]] || { echo "usage: scripts/npm-package.sh <version> <directory>" >&2; exit 2; }
VERSION=$1
DEST=$2
[[ -f $ROOT/dist/api/main.js ]] || { echo "npm-package: dist/ is not built (make build)" >&2; exit 1; }

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
# What package.json's "files" names (and npm always packs), from this checkout; npm pack picks among them.
mkdir -p "$STAGE/boxauth/dist" "$STAGE/boxauth/api/db" "$STAGE/boxauth/api/ui" "$STAGE/boxauth/api/saml" "$STAGE/boxauth/api/grpc"
cp -r "$ROOT"/{package.json,package-lock.json,README.md,LICENSE,CHANGELOG.md,bin,crds,docs} "$STAGE/boxauth/"
cp -r "$ROOT"/dist/{api,operator} "$STAGE/boxauth/dist/"
cp -r "$ROOT/api/db/migrations" "$STAGE/boxauth/api/db/"
cp -r "$ROOT/api/ui/assets" "$STAGE/boxauth/api/ui/"
cp -r "$ROOT/api/saml/xsd" "$STAGE/boxauth/api/saml/"
cp -r "$ROOT/api/grpc/protos" "$STAGE/boxauth/api/grpc/"
node "$ROOT/scripts/release-stage.mjs" package "$STAGE/boxauth" "$VERSION"
mkdir -p "$DEST"
(cd "$STAGE/boxauth" && npm pack --ignore-scripts --silent --pack-destination "$DEST" >/dev/null)
[[ -f $DEST/boxauth-$VERSION.tgz ]] || { echo "npm-package: npm pack wrote no boxauth-$VERSION.tgz" >&2; exit 1; }
