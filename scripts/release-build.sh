#!/usr/bin/env bash
# release-build.sh — build (once) the box API of an earlier release, to run beside this code.
#
# Usage: scripts/release-build.sh [<commit>]      (default: the one in scripts/previous-release)
#
# Prints the directory of the build on stdout (progress goes to stderr):
#   ${BOXAUTH_RELEASE_CACHE:-$HOME/.cache/boxauth/releases}/<commit>/
# holding what running that release's API needs, as its image holds it (see the Dockerfile):
# package.json, package-lock.json, tsconfig.json, api/ (sources, migrations, UI assets, protos),
# crds/, and dist/ compiled from them by its own tsconfig. Its node_modules is a link to this
# checkout's when the two package-lock.json are identical (no install, no network), else its own
# (`npm ci` there, checked to load argon2). `node <dir>/dist/api/main.js` runs it.
#
# Cheap when cached: a build is complete once it holds .built; later runs check the link and
# build nothing. The build happens in a temporary directory renamed into place, under a lock per
# commit (util-linux flock), so two runs at once build once and nobody sees half a build.
# test/integration/rolling-upgrade.test.ts calls it; .ci/run calls it before `make test`, so
# that the suite's budget does not pay for a cold build (about a minute on two cores).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${BOXAUTH_RELEASE_CACHE:-$HOME/.cache/boxauth/releases}
# What the image copies to run the API (Dockerfile), less what is compiled into dist/.
FILES=(package.json package-lock.json tsconfig.json api crds)

log() { printf 'release-build: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

want=${1:-$(grep -v '^[[:space:]]*\(#\|$\)' "$ROOT/scripts/previous-release" | head -n 1)}
commit=$(git -C "$ROOT" rev-parse --verify --quiet "$want^{commit}") ||
  die "commit $want is not in this clone (a shallow clone? git fetch --unshallow)"
DIR=$CACHE/$commit

# The node_modules that fits the release: one installed from a package-lock.json identical to
# the release's (the one beside it). The checkout's own, resolved (a worktree's may be a link).
fits() { [[ -d $1 && -f $(dirname "$1")/package-lock.json ]] && cmp -s "$(dirname "$1")/package-lock.json" "$2/package-lock.json"; }
checkout_modules=$(realpath -q "$ROOT/node_modules" || true)

# Complete, and its packages still there (a link outlives the checkout it points into).
ready() { [[ -f $DIR/.built ]] && { [[ ! -L $DIR/node_modules ]] || fits "$(realpath -q "$DIR/node_modules")" "$DIR"; }; }

# node_modules for the release in $1: a link when this checkout's fits, else `npm ci` there.
install_modules() {
  local dir=$1
  if [[ -n $checkout_modules ]] && fits "$checkout_modules" "$dir"; then
    ln -sfn "$checkout_modules" "$dir/node_modules.new" && mv -T "$dir/node_modules.new" "$dir/node_modules"
    return
  fi
  log "its package-lock.json differs from this checkout's packages: npm ci in $dir"
  rm -rf "$dir/node_modules"
  # --ignore-scripts: the release's `prepare` would compile with files left out here (done below,
  # as the image does); then the packages' own install scripts (argon2's picks or compiles a
  # binary that loads in this Node: a prebuilt one that does not match crashes at load).
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts && npm rebuild --no-audit --no-fund) >&2
  (cd "$dir" && node -e "import('argon2').then((a) => a.default.hash('release build check')).then(() => console.log('argon2 works'))") >&2 ||
    die "argon2 does not load in $dir/node_modules"
}

if ready; then
  printf '%s\n' "$DIR"
  exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.$commit.lock"
if ! flock -n 9; then
  log "another release-build.sh is building ${commit:0:12}; waiting for it"
  flock 9
fi

if [[ -f $DIR/.built ]]; then
  ready || install_modules "$DIR" # the checkout its link pointed into is gone or changed
else
  log "building ${commit:0:12} into $DIR"
  start=$SECONDS
  TMP=$(mktemp -d "$CACHE/.build.XXXXXX") && chmod 755 "$TMP"
  trap 'rm -rf "$TMP"' EXIT
  git -C "$ROOT" archive --format=tar "$commit" "${FILES[@]}" | tar -x -C "$TMP"
  install_modules "$TMP"
  # Its own compiler (node_modules/.bin/tsc of its packages) and tsconfig; only api/ is there to compile.
  (cd "$TMP" && node_modules/.bin/tsc -p tsconfig.json) >&2 || die "${commit:0:12} does not compile"
  [[ -f $TMP/dist/api/main.js ]] || die "${commit:0:12} compiled no dist/api/main.js"
  touch "$TMP/.built"
  rm -rf "$DIR" # a build that was cut off (no .built)
  mv -T "$TMP" "$DIR"
  trap - EXIT
  log "built ${commit:0:12} in $((SECONDS - start)) s"
fi
ready || die "$DIR is not complete after the build"
printf '%s\n' "$DIR"
