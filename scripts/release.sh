#!/usr/bin/env bash
# release.sh — the release artifacts of one version (what `make release VERSION=x.y.z` runs).
#
# Usage: scripts/release.sh <version>        (a semantic version, x.y.z[-pre][+build], without a "v")
#
# Writes into ${BOXAUTH_RELEASE_DIR:-release/<version>} (release/ is ignored by git), from staging
# copies: no tracked file is changed.
#   boxauth-<version>.tgz           the npm package: the CLI `boxauth` and the API `boxauth-api`
#                                   (npm install -g ./boxauth-<version>.tgz)
#   boxauth-<version>.cdx.json      its SBOM, CycloneDX JSON (npm sbom, the dependencies it installs)
#   charts/boxauth-<version>.tgz    the Helm chart (version and appVersion <version>, image
#   charts/index.yaml                 ${BOXAUTH_IMAGE_REPOSITORY:-ghcr.io/boxauth/boxauth}:<version>), and
#                                     the chart repository's index (helm repo add <url of charts/>)
#   charts/values-production.yaml   the chart's production values, served beside it
#                                     (helm install … -f <url of charts/>/values-production.yaml)
#   crds/                           the CRDs, for kubectl apply --server-side -f crds/ before a helm upgrade
#                                     (Helm installs a chart's CRDs, never upgrades them)
#   oci/                            the chart as an OCI image layout, tagged <version>
#                                     (oras cp --from-oci-layout oci:<version> <registry>/boxauth:<version>)
#   install.yaml                    one manifest for kubectl apply -f: the namespace boxauth-system, the
#                                     CRDs, the operator and its RBAC, rendered from the chart (with
#                                     the database of Secret boxauth-database: no bundled PostgreSQL)
#   boxauth-<version>-image.oci.tar the container image ${BOXAUTH_IMAGE_REPOSITORY:-ghcr.io/boxauth/boxauth}:<version>,
#                                     an OCI image archive of Debian trixie and the npm package above, for each of
#                                     ${BOXAUTH_IMAGE_ARCHES:-amd64 arm64} (one image index: scripts/image-build.sh;
#                                     ctr -n k8s.io images import, skopeo copy --multi-arch all oci-archive:…)
#   boxauth-<version>-image.cdx.json  its SBOM, CycloneDX JSON: the Debian packages and the npm packages in it
#                                     (both left out when BOXAUTH_RELEASE_IMAGE=0: make release RELEASE_IMAGE=0)
#   SHA256SUMS                      every file above (sha256sum -c SHA256SUMS)
# Builds dist/ (make build) and helm (make kube-binaries, scripts/kube-build.sh) first when needed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HELM=${BOXAUTH_KUBE_CACHE:-$HOME/.cache/boxauth/kube}/bin/helm
IMAGE_REPOSITORY=${BOXAUTH_IMAGE_REPOSITORY:-ghcr.io/boxauth/boxauth}
NAMESPACE=boxauth-system

usage() {
  echo "usage: make release VERSION=<x.y.z> (a semantic version such as 1.2.3 or 1.2.3-rc.1, without a leading v)" >&2
  exit 2
}

# Semantic Versioning 2.0.0, https://semver.org/#is-there-a-suggested-regular-expression-regex-to-check-a-semver-string
SEMVER='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$'
[[ $# -eq 1 && $1 =~ $SEMVER ]] || usage
VERSION=$1
OUT=${BOXAUTH_RELEASE_DIR:-$ROOT/release/$VERSION}

log() { printf 'release: %s\n' "$*" >&2; }
trap 'log "error: line $LINENO: \`$BASH_COMMAND\` failed (exit $?)"' ERR

make -C "$ROOT" --no-print-directory build kube-binaries >&2

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT/charts"

log "npm package boxauth $VERSION"
"$ROOT/scripts/npm-package.sh" "$VERSION" "$OUT"
mkdir -p "$STAGE/boxauth" && tar -xzf "$OUT/boxauth-$VERSION.tgz" -C "$STAGE/boxauth" --strip-components=1 package/package.json package/npm-shrinkwrap.json

log "SBOM (CycloneDX) of the package's dependencies"
# The dependencies of the lock file, as npm-shrinkwrap.json pins them: what `npm install -g boxauth@<version>`
# installs from a registry. (From the tarball, npm resolves the ranges of package.json again: npm/cli#5325.)
node "$ROOT/scripts/release-stage.mjs" sbom-input "$STAGE/boxauth" "$STAGE/sbom/boxauth"
(cd "$STAGE/sbom/boxauth" && npm sbom --sbom-format cyclonedx --sbom-type application --omit dev --package-lock-only) >"$OUT/boxauth-$VERSION.cdx.json"

log "Helm chart $VERSION (image $IMAGE_REPOSITORY:$VERSION)"
mkdir "$STAGE/chart" && cp -r "$ROOT/charts/boxauth" "$STAGE/chart/"
node "$ROOT/scripts/release-stage.mjs" chart "$STAGE/chart/boxauth" "$IMAGE_REPOSITORY" "$VERSION"
"$HELM" package "$STAGE/chart/boxauth" --version "$VERSION" --app-version "$VERSION" --destination "$OUT/charts" >/dev/null
"$HELM" lint --strict "$OUT/charts/boxauth-$VERSION.tgz" >/dev/null
"$HELM" repo index "$OUT/charts"
node "$ROOT/scripts/release-stage.mjs" oci-layout "$OUT/charts/boxauth-$VERSION.tgz" "$OUT/oci"

# What install.md and versions.md tell an admin to apply from the release: the production values beside the chart,
# and the CRDs of this version (crds/, of which the chart holds copies).
cp "$ROOT/charts/boxauth/values-production.yaml" "$OUT/charts/values-production.yaml"
cp -r "$ROOT/crds" "$OUT/crds"

log "install.yaml"
# The chart's own objects, rendered from the packaged chart: one source for both ways to install. A static
# file cannot hold a generated password, so the operator's database is named by a Secret the admin makes.
{
  cat <<EOF
# boxauth $VERSION: the operator, its CRDs and RBAC in namespace $NAMESPACE, for kubectl apply -f.
# Rendered from the Helm chart boxauth-$VERSION (helm template --include-crds); before the operator can start:
#   kubectl -n $NAMESPACE create secret generic boxauth-database --from-literal=DATABASE_URL='postgres://…'
# (docs/kubernetes/install.md). Objects are labelled as the chart labels them.
---
apiVersion: v1
kind: Namespace
metadata:
  name: $NAMESPACE
  labels:
    app.kubernetes.io/name: boxauth
EOF
  "$HELM" template boxauth "$OUT/charts/boxauth-$VERSION.tgz" --namespace "$NAMESPACE" --include-crds \
    --set postgresql.enabled=false --set database.existingSecret=boxauth-database
} >"$OUT/install.yaml"

if [[ ${BOXAUTH_RELEASE_IMAGE:-1} != 0 ]]; then
  log "container image $IMAGE_REPOSITORY:$VERSION (${BOXAUTH_IMAGE_ARCHES:-amd64 arm64}) and its SBOM"
  arch_args=()
  for arch in ${BOXAUTH_IMAGE_ARCHES:-amd64 arm64}; do arch_args+=(--arch "$arch"); done
  "$ROOT/scripts/image-build.sh" --version "$VERSION" "${arch_args[@]}" --package "$OUT/boxauth-$VERSION.tgz" --name "$IMAGE_REPOSITORY:$VERSION" \
    --sbom "$OUT/boxauth-$VERSION-image.cdx.json" "$OUT/boxauth-$VERSION-image.oci.tar"
fi

(cd "$OUT" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
log "written to $OUT:"
(cd "$OUT" && find . -maxdepth 2 ! -path './oci/*' -type f -printf '  %P\n' | LC_ALL=C sort) >&2
