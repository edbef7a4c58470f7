#!/usr/bin/env bash
# The real Kueue controller (sigs.k8s.io/kueue at the version
# test/tools/kueue/go.mod pins, built into $BIN/kueue by `make bin/kueue`)
# running on this machine beside a local control plane, its admission and
# conversion webhooks called by the API server at
# https://localhost:$KUEUE_WEBHOOK_PORT. Only the RayCluster, RayJob and
# TrainJob integrations are on, and only their webhooks (and Kueue's own) are
# installed: Kueue then never sits in the path of a Pod or a JobSet.
#
#   KUBECONFIG=... hack/kueue-local.sh up     apply Kueue's CRDs and webhook
#                                             configurations, (re)start it,
#                                             wait until ready
#   KUBECONFIG=... hack/kueue-local.sh down   stop it and delete its webhook
#                                             configurations
#
# Environment:
#   KUBECONFIG            admin kubeconfig of a running cluster (required by up)
#   BIN                   tool binaries (default: <repo>/bin)
#   KUEUE_STATE_DIR       certificates, config, pid and log (default: <repo>/.run/kueue)
#   KUEUE_WEBHOOK_PORT    webhook server port on 127.0.0.1 (default 9447)
#   KUEUE_PROBE_ADDR      healthz/readyz address, HTTP (default 127.0.0.1:8098)
#
# What `up` installs comes from Kueue's module: config/default rendered by
# kustomize, of which only the CRDs (conversion webhooks rewritten) and the
# webhook configurations (rewritten by hack/webhookurl to this machine, kept
# to the kueue.x-k8s.io, ray.io and trainer.kubeflow.org groups) are
# applied. The Ray and TrainJob webhooks get an objectSelector on
# the queue-name label: Kueue's TrainJob webhook otherwise validates every
# TrainJob (queued or not) and answers first, in its own words. Kueue runs with the caller's admin kubeconfig, as a third-party
# test dependency; Gantry's manager is the one held to its chart's RBAC.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/bin}
STATE=${KUEUE_STATE_DIR:-$root/.run/kueue}
case $STATE in /*) ;; *) STATE=$PWD/$STATE ;; esac
WEBHOOK_PORT=${KUEUE_WEBHOOK_PORT:-9447}
PROBE_ADDR=${KUEUE_PROBE_ADDR:-127.0.0.1:8098}
CERTS=$STATE/certs
CONTROLLER=$BIN/kueue
FIELD_MANAGER=gantry-kueue-local
NAMESPACE=kueue-system
TOOLS_MOD=$root/test/tools/kueue
WEBHOOK_CONFIGS=(mutatingwebhookconfiguration/kueue-mutating-webhook-configuration
  validatingwebhookconfiguration/kueue-validating-webhook-configuration)

NAME=kueue
# shellcheck source=hack/lib/local-component.sh
. "$root/hack/lib/local-component.sh"

install_manifests() {
  local dir rendered
  dir=$(module_dir sigs.k8s.io/kueue "$TOOLS_MOD")
  rendered=$("$BIN/kubectl" kustomize "$dir/config/default" 2>/dev/null |
    (cd "$root" && go run ./hack/webhookurl --url "https://localhost:$WEBHOOK_PORT" --ca-file "$CERTS/ca.crt" \
      --crds --keep-group kueue.x-k8s.io --keep-group ray.io --keep-group trainer.kubeflow.org \
      --require-label ray.io=kueue.x-k8s.io/queue-name --require-label trainer.kubeflow.org=kueue.x-k8s.io/queue-name))
  kubectl create namespace "$NAMESPACE" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  # Server-side apply: the CRDs exceed client-side apply's 256 KiB annotation.
  kubectl apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f - <<<"$rendered" >/dev/null
  printf '%s\n' "$rendered" >"$STATE/manifests.yaml"
  kubectl get -f "$STATE/manifests.yaml" -o name | grep '^customresourcedefinition' >"$STATE/crds.txt"
  for _ in $(seq 1 60); do
    # shellcheck disable=SC2046
    kubectl wait --for=condition=Established --timeout=30s $(cat "$STATE/crds.txt") >/dev/null 2>&1 && break
    sleep 1
  done
  log "applied Kueue $KUEUE_VERSION's CRDs and webhook configurations (https://localhost:$WEBHOOK_PORT)"
}

write_config() {
  # Kueue's Configuration API (apis/config/v1beta2). Internal cert
  # management off: the certificates are the ones above.
  cat >"$STATE/config.yaml" <<CONFIG
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: $NAMESPACE
$(config_out_of_cluster)
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: "$PROBE_ADDR"
manageJobsWithoutQueueName: false
integrations:
  frameworks:
  - ray.io/raycluster
  - ray.io/rayjob
  - trainer.kubeflow.org/trainjob
CONFIG
}

# Kueue serves its metrics over TLS from a fixed path when its internal
# cert management is off (cmd/kueue/main.go: /etc/kueue/metrics/certs,
# where its Deployment mounts a Secret); the local certificates go there.
METRICS_CERTS=/etc/kueue/metrics/certs

install_metrics_certs() {
  mkdir -p "$METRICS_CERTS" 2>/dev/null && cp "$CERTS/tls.crt" "$CERTS/tls.key" "$METRICS_CERTS/" 2>/dev/null ||
    die "Kueue reads its metrics certificate from $METRICS_CERTS, which is not writable here (run as root, as CI does)"
}

# The visibility API server (VisibilityOnDemand) is off: it is an
# aggregated API server that needs its own certificates and APIService, and
# no spec reads pending workloads through it.
start_controller() {
  install_metrics_certs
  nohup "$CONTROLLER" --kubeconfig "$KUBECONFIG" --config "$STATE/config.yaml" \
    --feature-gates=VisibilityOnDemand=false --zap-log-level=info >"$STATE/controller.log" 2>&1 &
  echo $! >"$STATE/controller.pid"
}

# dry_run_clusterqueue passes only when the API server reached Kueue's
# webhooks: a ClusterQueue created with a server-side dry run, which goes
# through mclusterqueue.kb.io and vclusterqueue.kb.io (failurePolicy Fail).
dry_run_clusterqueue() {
  kubectl create --dry-run=server -o name -f - >/dev/null 2>>"$STATE/dry-run.log" <<'QUEUE'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: kueue-local-readiness
spec:
  namespaceSelector: {}
QUEUE
}

up() {
  : "${KUBECONFIG:?hack/kueue-local.sh up needs KUBECONFIG (an admin kubeconfig)}"
  SECONDS=0
  KUEUE_VERSION=$(cd "$TOOLS_MOD" && go list -m -f '{{.Version}}' sigs.k8s.io/kueue)
  component_up sigs.k8s.io/kueue "$KUEUE_VERSION" dry_run_clusterqueue
  log "Kueue $KUEUE_VERSION ready in ${SECONDS}s (pid $(cat "$STATE/controller.pid"), webhooks https://localhost:$WEBHOOK_PORT, log $STATE/controller.log)"
}

down() {
  component_down
  rm -f "$METRICS_CERTS/tls.crt" "$METRICS_CERTS/tls.key" 2>/dev/null || true
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
