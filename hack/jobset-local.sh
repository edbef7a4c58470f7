#!/usr/bin/env bash
# The real JobSet controller (sigs.k8s.io/jobset at the version go.mod pins,
# built into $BIN/jobset-controller by `make bin/jobset-controller`) running on
# this machine beside a local control plane, with its admission webhooks
# called by the API server at https://localhost:$JOBSET_WEBHOOK_PORT.
#
#   KUBECONFIG=... hack/jobset-local.sh up     apply JobSet's CRD and webhook
#                                              configurations, (re)start the
#                                              controller, wait until ready
#   KUBECONFIG=... hack/jobset-local.sh down   stop the controller and delete
#                                              its webhook configurations
#
# Environment:
#   KUBECONFIG            admin kubeconfig of a running cluster (required by up)
#   BIN                   tool binaries (default: <repo>/bin)
#   JOBSET_STATE_DIR      certificates, config, pid and log (default: <repo>/.run/jobset)
#   JOBSET_WEBHOOK_PORT   webhook server port on 127.0.0.1 (default 9445)
#   JOBSET_METRICS_ADDR   metrics address, HTTPS; "0" disables (default 127.0.0.1:8095)
#   JOBSET_PROBE_ADDR     healthz/readyz address, HTTP (default 127.0.0.1:8096)
#
# What `up` installs is JobSet's own manifests from the Go module: the CRD
# (config/components/crd/bases) and the two webhook configurations of
# config/default, rewritten by hack/webhookurl from the in-cluster Service to
# a URL on this machine and a CA this script generates. JobSet's RBAC,
# Namespace, Deployment and cert Secret are not applied: the controller runs
# with the caller's admin kubeconfig, which is fine for a third-party test
# dependency (Gantry's own manager is the one held to its chart's RBAC).
#
# `down` deletes the webhook configurations as well (their failurePolicy is
# Fail: left behind, every JobSet create would be rejected) and keeps the CRD,
# which Gantry's TrainJob controller needs either way.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/bin}
STATE=${JOBSET_STATE_DIR:-$root/.run/jobset}
case $STATE in /*) ;; *) STATE=$PWD/$STATE ;; esac
WEBHOOK_PORT=${JOBSET_WEBHOOK_PORT:-9445}
METRICS_ADDR=${JOBSET_METRICS_ADDR:-127.0.0.1:8095}
PROBE_ADDR=${JOBSET_PROBE_ADDR:-127.0.0.1:8096}
CERTS=$STATE/certs
CONTROLLER=$BIN/jobset-controller
FIELD_MANAGER=gantry-jobset-local
WEBHOOK_CONFIGS=(mutatingwebhookconfiguration/jobset-mutating-webhook-configuration
  validatingwebhookconfiguration/jobset-validating-webhook-configuration)

NAME=jobset
# shellcheck source=hack/lib/local-component.sh
. "$root/hack/lib/local-component.sh"

install_manifests() {
  local dir
  dir=$(module_dir sigs.k8s.io/jobset)
  # Server-side apply: the CRD exceeds client-side apply's 256 KiB annotation.
  kubectl apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" \
    -f "$dir/config/components/crd/bases" >/dev/null
  wait_established "$dir/config/components/crd/bases"
  # config/default names them as a real install does (jobset-*-webhook-configuration).
  local webhooks
  webhooks=$("$BIN/kubectl" kustomize "$dir/config/default" 2>/dev/null |
    (cd "$root" && go run ./hack/webhookurl --url "https://localhost:$WEBHOOK_PORT" --ca-file "$CERTS/ca.crt"))
  kubectl apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f - <<<"$webhooks" >/dev/null
  log "applied JobSet $JOBSET_VERSION's CRD and webhook configurations (https://localhost:$WEBHOOK_PORT)"
}

write_config() {
  # JobSet's Configuration API (api/config/v1alpha1): the webhook port and
  # cert dir exist only here, not as flags. Internal cert management off:
  # the certificates are the ones above, not cert-controller's Secret.
  # ElasticJobSet (alpha, off in JobSet) lets an elastic TrainJob's JobSet
  # change its parallelism in place.
  cat >"$STATE/config.yaml" <<CONFIG
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
$(config_out_of_cluster)
metrics:
  bindAddress: "$METRICS_ADDR"
  certDir: $CERTS
health:
  healthProbeBindAddress: "$PROBE_ADDR"
featureGates:
  ElasticJobSet: true
CONFIG
}

start_controller() {
  # Flags: main.go of sigs.k8s.io/jobset (--config, --metrics-bind-address,
  # --health-probe-bind-address, --leader-elect; flags win over the file)
  # and controller-runtime's --kubeconfig.
  nohup "$CONTROLLER" --kubeconfig "$KUBECONFIG" --config "$STATE/config.yaml" \
    --leader-elect=false --metrics-bind-address="$METRICS_ADDR" \
    --health-probe-bind-address="$PROBE_ADDR" >"$STATE/controller.log" 2>&1 &
  echo $! >"$STATE/controller.pid"
}

# dry_run_jobset creates a JobSet with a server-side dry run: it passes only
# if the API server reached both webhooks (failurePolicy Fail), and the
# mutating one must have defaulted completionMode to Indexed.
dry_run_jobset() {
  local mode
  mode=$(kubectl create --dry-run=server -o 'jsonpath={.spec.replicatedJobs[0].template.spec.completionMode}' -f - <<'JOBSET' 2>>"$STATE/dry-run.log"
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: jobset-local-readiness
  namespace: default
spec:
  replicatedJobs:
  - name: w
    template:
      spec:
        template:
          spec:
            containers:
            - name: c
              image: busybox
JOBSET
  ) || return 1
  [ "$mode" = Indexed ] || { echo "dry run not defaulted (completionMode=$mode)" >>"$STATE/dry-run.log"; return 1; }
}

up() {
  : "${KUBECONFIG:?hack/jobset-local.sh up needs KUBECONFIG (an admin kubeconfig)}"
  case $PROBE_ADDR in 0 | "") die "JOBSET_PROBE_ADDR must be an address: readiness is read from it" ;; esac
  SECONDS=0
  JOBSET_VERSION=$(cd "$root" && go list -m -f '{{.Version}}' sigs.k8s.io/jobset)
  component_up sigs.k8s.io/jobset "$JOBSET_VERSION" dry_run_jobset
  log "JobSet controller $JOBSET_VERSION ready in ${SECONDS}s (pid $(cat "$STATE/controller.pid"), webhooks https://localhost:$WEBHOOK_PORT, readyz http://$PROBE_ADDR/readyz, log $STATE/controller.log)"
}

down() { component_down; }

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
