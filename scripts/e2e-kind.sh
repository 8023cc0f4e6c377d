#!/usr/bin/env bash
# e2e-kind.sh — boxauth on a real (kind) cluster, for machines with Docker:
#   1. a kind cluster (kind from PATH, else built with `go install` into the kube cache);
#   2. the image built from the Dockerfile and loaded into it;
#   3. the chart installed (bundled PostgreSQL), the operator Ready;
#   4. examples/ applied in namespace team-a, the Box Available, the Clients Ready;
#   5. a Pod fetches a token from the box with the client's secret (mounted from the
#      Secret the operator generated), and calls the box's API with it.
# Leaves the cluster running when KEEP=1 (delete it with: kind delete cluster --name boxauth-e2e).
#
# Environment: KIND_CLUSTER (boxauth-e2e), IMAGE (boxauth:dev, the chart's default), KIND_VERSION (v0.30.0),
#              KIND_NODE_IMAGE (kind's default), TIMEOUT (300s), KEEP (0).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER=${KIND_CLUSTER:-boxauth-e2e}
IMAGE=${IMAGE:-boxauth:dev}
KIND_VERSION=${KIND_VERSION:-v0.30.0}
TIMEOUT=${TIMEOUT:-300s}
KEEP=${KEEP:-0}
CACHE_BIN=${BOXAUTH_KUBE_CACHE:-$HOME/.cache/boxauth/kube}/bin
NS=team-a

log() { printf 'e2e-kind: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v docker >/dev/null || die "docker is not on PATH: make e2e-kind needs a Docker engine (on machines without one, make test runs the operator against a local kube-apiserver instead)"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed)"

# kubectl and helm: the machine's, else the ones scripts/kube-build.sh builds.
for tool in kubectl helm; do
  if ! command -v "$tool" >/dev/null; then
    [[ -x $CACHE_BIN/$tool ]] || "$ROOT/scripts/kube-build.sh"
    export PATH="$CACHE_BIN:$PATH"
  fi
done
if ! command -v kind >/dev/null; then
  if [[ ! -x $CACHE_BIN/kind ]]; then
    command -v go >/dev/null || die "kind is not on PATH and go is not there to build it"
    log "building kind $KIND_VERSION"
    mkdir -p "$CACHE_BIN"
    GOBIN=$CACHE_BIN CGO_ENABLED=0 go install "sigs.k8s.io/kind@$KIND_VERSION"
  fi
  export PATH="$CACHE_BIN:$PATH"
fi

cleanup() {
  if [[ $KEEP == 1 ]]; then
    log "cluster $CLUSTER kept (KEEP=1); kubectl --context kind-$CLUSTER ..."
  else
    log "deleting cluster $CLUSTER"
    kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
}
dump() {
  log "failed; what the cluster says:"
  kubectl get pods,boxes,clients,accesspolicies -A >&2 || true
  kubectl -n boxauth-system logs -l app.kubernetes.io/component=operator --tail=50 >&2 || true
  kubectl -n $NS logs -l app.kubernetes.io/instance=auth --tail=30 >&2 || true
  kubectl get events -A --sort-by=.lastTimestamp | tail -30 >&2 || true
}
on_exit() {
  local rc=$?
  if ((rc)); then dump; fi
  cleanup
  exit "$rc"
}
trap on_exit EXIT

if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  log "using the existing kind cluster $CLUSTER"
else
  log "creating kind cluster $CLUSTER"
  kind create cluster --name "$CLUSTER" ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} --wait 120s
fi
kubectl config use-context "kind-$CLUSTER" >/dev/null

log "building $IMAGE"
docker build -t "$IMAGE" "$ROOT"
kind load docker-image "$IMAGE" --name "$CLUSTER"

log "installing the chart"
helm upgrade --install boxauth "$ROOT/charts/boxauth" --namespace boxauth-system --create-namespace \
  --set image.repository="${IMAGE%:*}" --set image.tag="${IMAGE##*:}" --set image.pullPolicy=Never \
  --wait --timeout "$TIMEOUT"
kubectl -n boxauth-system rollout status deployment/boxauth-operator --timeout "$TIMEOUT"

log "applying examples/ in namespace $NS"
kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f -
kubectl apply -n "$NS" -f "$ROOT/examples/"
kubectl -n "$NS" wait --for=condition=Ready box/auth --timeout "$TIMEOUT"
kubectl -n "$NS" wait --for=condition=Available box/auth --timeout "$TIMEOUT"
kubectl -n "$NS" wait --for=condition=Ready clients --all --timeout "$TIMEOUT"
kubectl -n "$NS" get boxes,clients,accesspolicies

log "a Pod fetches a token for the client orders and uses it"
kubectl -n "$NS" delete pod token-check --ignore-not-found >/dev/null
kubectl -n "$NS" apply -f - <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: token-check
spec:
  restartPolicy: Never
  securityContext: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: RuntimeDefault } }
  containers:
    - name: curl
      image: curlimages/curl:8.11.1
      securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: [ALL] } }
      env:
        - name: CLIENT_ID
          valueFrom: { secretKeyRef: { name: orders-client-secret, key: client-id } }
        - name: CLIENT_SECRET
          valueFrom: { secretKeyRef: { name: orders-client-secret, key: client-secret } }
      command:
        - sh
        - -ec
        - |
          answer=$(curl -sf -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=client_credentials http://auth.team-a.svc/auth/token)
          token=$(echo "$answer" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
          test -n "$token"
          curl -sf -H "Authorization: Bearer $token" http://auth.team-a.svc/Client/orders >/dev/null
          echo "token for $CLIENT_ID works"
YAML
kubectl -n "$NS" wait --for=jsonpath='{.status.phase}'=Succeeded pod/token-check --timeout "$TIMEOUT" ||
  { kubectl -n "$NS" logs token-check >&2 || true; die "the Pod could not get a token"; }
kubectl -n "$NS" logs token-check
log "ok: image, chart, operator, box and a token fetched by a Pod"
