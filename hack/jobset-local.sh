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

log() { echo "jobset-local: $*"; }
die() { echo "jobset-local: $*" >&2; exit 1; }
kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }

# jobset_dir is the module directory of the JobSet version go.mod pins.
jobset_dir() {
  local dir
  dir=$(cd "$root" && go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
  if [ -z "$dir" ]; then
    (cd "$root" && go mod download sigs.k8s.io/jobset)
    dir=$(cd "$root" && go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
  fi
  [ -d "$dir/config" ] || die "cannot find the sigs.k8s.io/jobset module (go list -m from $root)"
  echo "$dir"
}

# check_binary fails unless $CONTROLLER was built from the JobSet version
# go.mod pins, so the controller always matches the manifests applied.
check_binary() {
  [ -x "$CONTROLLER" ] || die "$CONTROLLER is missing; build it with: make $CONTROLLER"
  local want have
  want=$(cd "$root" && go list -m -f '{{.Version}}' sigs.k8s.io/jobset)
  have=$(go version -m "$CONTROLLER" | awk '$1 == "mod" && $2 == "sigs.k8s.io/jobset" {print $3}')
  [ "$have" = "$want" ] ||
    die "$CONTROLLER is JobSet ${have:-unknown}, go.mod pins $want; rm it and run: make $CONTROLLER"
  JOBSET_VERSION=$want
}

# certs_valid: CA and serving certificate present, valid for at least one
# more day, the serving certificate signed by the CA, for localhost and
# 127.0.0.1, and matching its key.
certs_valid() {
  local f
  for f in ca.crt ca.key tls.crt tls.key; do [ -s "$CERTS/$f" ] || return 1; done
  openssl x509 -checkend 86400 -noout -in "$CERTS/ca.crt" >/dev/null 2>&1 || return 1
  openssl x509 -checkend 86400 -noout -in "$CERTS/tls.crt" >/dev/null 2>&1 || return 1
  openssl verify -CAfile "$CERTS/ca.crt" "$CERTS/tls.crt" >/dev/null 2>&1 || return 1
  local text
  text=$(openssl x509 -noout -text -in "$CERTS/tls.crt" 2>/dev/null) || return 1
  grep -q 'DNS:localhost' <<<"$text" && grep -q 'IP Address:127.0.0.1' <<<"$text" || return 1
  [ "$(openssl x509 -noout -pubkey -in "$CERTS/tls.crt")" = "$(openssl pkey -pubout -in "$CERTS/tls.key" 2>/dev/null)" ]
}

# ensure_certs keeps the certificates in $CERTS if still valid, else makes a
# self-signed CA and a serving certificate for DNS localhost and IP 127.0.0.1
# (tls.crt/tls.key, the names controller-runtime's webhook server reads).
ensure_certs() {
  if certs_valid; then
    log "reusing the webhook certificates in $CERTS"
    return 0
  fi
  rm -rf "$CERTS"
  mkdir -p "$CERTS"
  (
    umask 077
    cd "$CERTS"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 365 \
      -subj "/CN=gantry jobset-local CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj "/CN=localhost" 2>/dev/null
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >tls.ext
    openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
      -days 365 -extfile tls.ext -out tls.crt 2>/dev/null
    rm -f tls.csr tls.ext
  )
  certs_valid || die "generating the webhook certificates in $CERTS failed"
  log "generated a CA and a serving certificate for localhost in $CERTS"
}

# wait_established waits until the CRDs in $1 are Established (kubectl wait
# exits at once while a CRD has no conditions yet, hence the loop).
wait_established() {
  for _ in $(seq 1 60); do
    kubectl wait --for=condition=Established --timeout=30s -f "$1" >/dev/null 2>&1 && return 0
    sleep 1
  done
  die "the CRDs in $1 did not become Established"
}

install_manifests() {
  local dir
  dir=$(jobset_dir)
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
  cat >"$STATE/config.yaml" <<CONFIG
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: $WEBHOOK_PORT
  certDir: $CERTS
metrics:
  bindAddress: "$METRICS_ADDR"
  certDir: $CERTS
health:
  healthProbeBindAddress: "$PROBE_ADDR"
CONFIG
}

controller_pid() {
  local pid
  [ -f "$STATE/controller.pid" ] || return 1
  pid=$(cat "$STATE/controller.pid")
  # Only a live process that is still our binary (pids get reused).
  kill -0 "$pid" 2>/dev/null || return 1
  ps -p "$pid" -o args= 2>/dev/null | grep -q "jobset-controller" || return 1
  echo "$pid"
}

stop_controller() {
  local pid
  if pid=$(controller_pid); then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    log "JobSet controller (pid $pid) stopped"
  fi
  rm -f "$STATE/controller.pid"
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

wait_ready() {
  local readyz=false
  : >"$STATE/dry-run.log"
  for _ in $(seq 1 240); do
    controller_pid >/dev/null ||
      die "the JobSet controller exited; last log lines:$(printf '\n'; tail -n 30 "$STATE/controller.log")"
    if [ $readyz = false ] && curl -fsS "http://$PROBE_ADDR/readyz" >/dev/null 2>&1; then readyz=true; fi
    if [ $readyz = true ] && dry_run_jobset; then return 0; fi
    sleep 0.5
  done
  curl -sS "http://$PROBE_ADDR/readyz?verbose" >&2 || true
  tail -n 5 "$STATE/dry-run.log" >&2
  die "the JobSet controller was not ready within 2 minutes (readyz: $readyz); see $STATE/controller.log"
}

up() {
  : "${KUBECONFIG:?hack/jobset-local.sh up needs KUBECONFIG (an admin kubeconfig)}"
  case $PROBE_ADDR in 0 | "") die "JOBSET_PROBE_ADDR must be an address: readiness is read from it" ;; esac
  SECONDS=0
  check_binary
  mkdir -p "$STATE"
  stop_controller
  ensure_certs
  install_manifests
  write_config
  start_controller
  wait_ready
  log "JobSet controller $JOBSET_VERSION ready in ${SECONDS}s (pid $(cat "$STATE/controller.pid"), webhooks https://localhost:$WEBHOOK_PORT, readyz http://$PROBE_ADDR/readyz, log $STATE/controller.log)"
}

down() {
  stop_controller
  if [ -n "${KUBECONFIG:-}" ] && [ -x "$BIN/kubectl" ]; then
    if kubectl delete --ignore-not-found --request-timeout=10s "${WEBHOOK_CONFIGS[@]}" >/dev/null 2>&1; then
      log "deleted JobSet's webhook configurations"
    else
      log "could not delete JobSet's webhook configurations (cluster unreachable?)"
    fi
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
