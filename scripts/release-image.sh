#!/usr/bin/env bash
# release-image.sh — build (once) the container image of an earlier release, to upgrade from.
#
# Usage: scripts/release-image.sh [<commit>]      (default: the one in scripts/previous-release)
#
# Prints the OCI archive on stdout (progress goes to stderr):
#   ${BOXAUTH_RELEASE_CACHE:-$HOME/.cache/boxauth/releases}/<commit>-image.oci.tar
# whose image is named docker.io/library/boxauth:release-<first 12 digits of the commit> (boxauth:release-…
# in a Pod). It is built as that release built its own: its TypeScript compiled by its own compiler (the packages scripts/release-build.sh
# found for it), packed by its scripts/npm-package.sh, made an image by its scripts/image-build.sh (the
# Debian base and the production dependencies come from their caches when the recipe and the lock file
# are unchanged: about two minutes). A release older than scripts/image-build.sh has no image to build:
# the script says so and fails. test/pods/pods.test.ts upgrades the boxes from this image to this
# checkout's (docs/kubernetes/laptop-cluster.md).
# Needs what `make image` needs (root, mmdebstrap). Built in a temporary directory renamed into place,
# under a lock per commit, so two runs at once build once.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${BOXAUTH_RELEASE_CACHE:-$HOME/.cache/boxauth/releases}

log() { printf 'release-image: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

want=${1:-$(grep -v '^[[:space:]]*\(#\|$\)' "$ROOT/scripts/previous-release" | head -n 1)}
commit=$(git -C "$ROOT" rev-parse --verify --quiet "$want^{commit}") ||
  die "commit $want is not in this clone (a shallow clone? git fetch --unshallow)"
OUT=$CACHE/$commit-image.oci.tar
if [[ -f $OUT ]]; then
  echo "$OUT"
  exit 0
fi
git -C "$ROOT" cat-file -e "$commit:scripts/image-build.sh" 2>/dev/null ||
  die "release $commit has no scripts/image-build.sh: it built no image"

built=$("$ROOT/scripts/release-build.sh" "$commit")
mkdir -p "$CACHE"
exec 9>"$CACHE/.$commit-image.lock"
flock 9
if [[ -f $OUT ]]; then
  echo "$OUT"
  exit 0
fi
TMP=$(mktemp -d "$CACHE/.image.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
start=$SECONDS
# A shared clone (objects borrowed from this one) checked out at the release: its scripts, its files,
# and its history, which dates the image's layer and names its revision.
git clone --quiet --shared --no-checkout "$ROOT" "$TMP/tree"
git -C "$TMP/tree" -c advice.detachedHead=false checkout --quiet "$commit"
ln -s "$(realpath "$built/node_modules")" "$TMP/tree/node_modules"
(cd "$TMP/tree" && node_modules/.bin/tsc -p tsconfig.json && node scripts/prune-dist.mjs) >&2 ||
  die "${commit:0:12} does not compile"
version=$(node -p "require('$TMP/tree/package.json').version")
"$TMP/tree/scripts/npm-package.sh" "$version" "$TMP/package" >&2
"$TMP/tree/scripts/image-build.sh" --version "$version" --package "$TMP/package/boxauth-$version.tgz" \
  --name "docker.io/library/boxauth:release-${commit:0:12}" --sbom "$TMP/image.cdx.json" "$TMP/image.oci.tar" >&2
mv "$TMP/image.oci.tar" "$OUT"
log "the image of release $commit ($version) built in $((SECONDS - start)) s"
echo "$OUT"
