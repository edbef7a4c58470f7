#!/usr/bin/env bash
# `make kind-e2e`: the end-to-end suite against Gantry installed IN a kind
# cluster, for machines with Docker. The steps are the local path's
# (hack/local-cluster.sh) with the parts kind does for real: the image from
# `make image` is loaded into the nodes, the chart is helm-installed with
# JobSet (jobset.install=true), the manager runs in-cluster with its
# self-managed certificates, and the API server calls the webhooks through
# the chart's Service.
#
# Environment:
#   KIND              kind binary (default: kind on PATH, else `go run sigs.k8s.io/kind@$KIND_VERSION`)
#   KIND_VERSION      default v0.30.0
#   KIND_CLUSTER      default gantry-e2e
#   KIND_NODE_IMAGE   optional node image (kindest/node:vX.Y.Z)
#   KIND_KEEP=true    keep the cluster afterwards
#   E2E_LABELS        Ginkgo label filter, e.g. ray or 'trainjob || manager'
#   E2E_ARGS          extra ginkgo flags, e.g. --focus 'RayCluster' or -v
#
# The suite runs as `make test-e2e` runs it (the ginkgo CLI, parallel
# processes, JUnit report in _artifacts/junit-e2e.xml). The in-cluster
# manager's log is followed into .run/kind/manager.log, which failed specs
# show the end of (GANTRY_MANAGER_LOG). Specs that need kwok's simulated
# kubelet (pods that finish on an annotation) skip on kind and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
BIN=${BIN:-$root/bin}
CLUSTER=${KIND_CLUSTER:-gantry-e2e}
KIND_VERSION=${KIND_VERSION:-v0.30.0}
STATE=$root/.run/kind
RELEASE=gantry
RELEASE_NS=gantry-system
log() { echo "kind-e2e: $*"; }

command -v docker >/dev/null 2>&1 || { log "needs Docker (docker on PATH and a running engine)"; exit 1; }
docker info >/dev/null 2>&1 || { log "the Docker engine is not reachable (docker info failed)"; exit 1; }
if [ -n "${KIND:-}" ]; then kind_cmd=("$KIND")
elif command -v kind >/dev/null 2>&1; then kind_cmd=(kind)
else kind_cmd=(go run "sigs.k8s.io/kind@$KIND_VERSION"); fi
kind() { "${kind_cmd[@]}" "$@"; }
mkdir -p "$STATE"
export KUBECONFIG=$STATE/kubeconfig
kubectl() { "$BIN/kubectl" "$@"; }
helm() { "$BIN/helm" "$@"; }

log_pid=
cleanup() {
  if [ -n "$log_pid" ]; then kill "$log_pid" 2>/dev/null || true; fi
  if [ "${KIND_KEEP:-false}" = "true" ]; then
    log "keeping cluster $CLUSTER (KUBECONFIG=$KUBECONFIG); delete it with: kind delete cluster --name $CLUSTER"
  else
    kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# The same tools and image the local path uses.
make --no-print-directory "$BIN/kubectl" "$BIN/helm"
version=$(awk '/^appVersion:/ {gsub(/"/, "", $2); print $2}' charts/gantry/Chart.yaml)
make --no-print-directory image
tarball=$root/bin/image/gantry-$version.tar

if ! kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  log "creating kind cluster $CLUSTER"
  kind create cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG" --wait 3m ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
else
  kind get kubeconfig --name "$CLUSTER" >"$KUBECONFIG"
fi
log "loading $tarball into the nodes"
kind load image-archive "$tarball" --name "$CLUSTER"

# As a cluster admin would: install, then upgrade once so that the shipped
# ClusterTrainingRuntimes (which need their CRD served) come too.
for pass in 1 2; do
  helm upgrade --install "$RELEASE" charts/gantry --namespace "$RELEASE_NS" --create-namespace \
    --set jobset.install=true --wait --timeout 5m
  log "helm pass $pass done"
done
kubectl -n "$RELEASE_NS" rollout status deployment --timeout 3m
kubectl wait --for=condition=Established crd --all --timeout 2m >/dev/null

# The manager's log, for the failure output of the specs.
manager_log=$STATE/manager.log
# (the binary itself, not the kubectl function, so that $! is its PID)
"$BIN/kubectl" -n "$RELEASE_NS" logs -f "deployment/$RELEASE" --all-containers --timestamps >"$manager_log" 2>&1 &
log_pid=$!

log "running the e2e suite against $CLUSTER"
USE_EXISTING_CLUSTER=true KUBECONFIG=$KUBECONFIG GANTRY_MANAGER_LOG=$manager_log \
  E2E_LABELS="${E2E_LABELS:-}" GOTEST_FLAGS="${E2E_ARGS:-}" \
  make --no-print-directory test-e2e
