#!/usr/bin/env bash
# `make run` / `make run-down`: a local control plane (kwokctl's binary
# runtime: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# kwok's simulated nodes) with Gantry's CRDs and the manager running against it.
#
#   hack/local-cluster.sh up     start (idempotent) and print how to use it
#   hack/local-cluster.sh down   stop the manager and the control plane
#
# USE_EXISTING_CLUSTER=true with KUBECONFIG set skips the local control plane.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
BIN=${BIN:-$root/bin}
CLUSTER=${GANTRY_CLUSTER:-gantry}
NODES=${GANTRY_NODES:-3}
STATE=$root/.run
# kwokctl keeps every cluster file (kubeconfig, pids, logs, etcd data) under
# KWOK_WORKDIR; keeping it in the checkout means nothing leaks into $HOME.
export KWOK_WORKDIR=$STATE/kwok
METRICS_ADDR=${GANTRY_METRICS_ADDR:-127.0.0.1:8080}
PROBE_ADDR=${GANTRY_PROBE_ADDR:-127.0.0.1:8081}
MANAGER_ARGS=${GANTRY_MANAGER_ARGS:-}

# kwokctl logs JSON lines; keep them in a file and show them only on failure.
kwokctl() {
  if ! "$BIN/kwokctl" "$@" >>"$STATE/kwokctl.log" 2>&1; then
    log "kwokctl $* failed; last log lines:"; tail -n 20 "$STATE/kwokctl.log" >&2
    return 1
  fi
}
kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }
log() { echo "gantry-run: $*"; }

manager_running() {
  [ -f "$STATE/manager.pid" ] && kill -0 "$(cat "$STATE/manager.pid")" 2>/dev/null
}

stop_manager() {
  if manager_running; then
    local pid
    pid=$(cat "$STATE/manager.pid")
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" || true
    log "manager (pid $pid) stopped"
  fi
  rm -f "$STATE/manager.pid"
}

up() {
  mkdir -p "$STATE"
  if [ "${USE_EXISTING_CLUSTER:-false}" = "true" ]; then
    : "${KUBECONFIG:?USE_EXISTING_CLUSTER=true needs KUBECONFIG}"
    log "using the existing cluster in $KUBECONFIG"
  else
    export KUBECONFIG=$KWOK_WORKDIR/clusters/$CLUSTER/kubeconfig.yaml
    if "$BIN/kwokctl" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
      log "local control plane '$CLUSTER' exists; starting it if stopped"
      kwokctl start cluster --name "$CLUSTER" || true
    else
      log "creating local control plane '$CLUSTER' (kwok, binary runtime)"
      kwokctl create cluster --name "$CLUSTER" --runtime binary \
        --kubeconfig "" \
        --kube-apiserver-binary "$BIN/kube-apiserver" \
        --kube-controller-manager-binary "$BIN/kube-controller-manager" \
        --kube-scheduler-binary "$BIN/kube-scheduler" \
        --etcd-binary "$BIN/etcd" \
        --kwok-controller-binary "$BIN/kwok" \
        --wait 2m
    fi
    kwokctl --name "$CLUSTER" scale node --replicas "$NODES"
  fi

  for _ in $(seq 1 120); do kubectl get --raw /readyz >/dev/null 2>&1 && break; sleep 0.5; done
  kubectl get --raw /readyz >/dev/null

  # Gantry's CRDs and JobSet's (the TrainJob controller renders JobSets).
  # Server-side apply: the runtime CRDs exceed the 256 KiB limit of the
  # last-applied annotation that client-side apply writes.
  local jobset_crds
  jobset_crds="$(go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)/config/components/crd/bases"
  for dir in config/crd/bases "$jobset_crds"; do
    kubectl apply --server-side --force-conflicts --field-manager=gantry-run -f "$dir" >/dev/null
    # kubectl wait exits at once, instead of waiting, when a CRD has no
    # status.conditions yet; retry until Established or a minute passed.
    local ok=false
    for _ in $(seq 1 60); do
      if kubectl wait --for=condition=Established --timeout=30s -f "$dir" >/dev/null 2>&1; then ok=true; break; fi
      sleep 1
    done
    [ "$ok" = true ] || { log "CRDs in $dir did not become Established"; exit 1; }
  done
  log "installed Gantry's and JobSet's CRDs"
  # The shipped ClusterTrainingRuntimes, so upstream TrainJob examples work.
  kubectl apply --server-side --force-conflicts --field-manager=gantry-run -k config/runtimes >/dev/null

  stop_manager
  # shellcheck disable=SC2086
  nohup "$BIN/manager" --kubeconfig "$KUBECONFIG" \
    --metrics-bind-address "$METRICS_ADDR" --health-probe-bind-address "$PROBE_ADDR" \
    --zap-devel $MANAGER_ARGS >"$STATE/manager.log" 2>&1 &
  echo $! >"$STATE/manager.pid"
  echo "$KUBECONFIG" >"$STATE/kubeconfig-path"

  local ready=false
  for _ in $(seq 1 240); do
    if ! manager_running; then
      log "the manager exited; last log lines:"; tail -n 30 "$STATE/manager.log"; exit 1
    fi
    if curl -fsS "http://$PROBE_ADDR/readyz" >/dev/null 2>&1; then ready=true; break; fi
    sleep 0.5
  done
  if [ "$ready" != true ]; then
    log "the manager did not become ready within 2 minutes; see $STATE/manager.log"; exit 1
  fi

  cat <<MSG

Gantry is running (manager ready: http://$PROBE_ADDR/readyz, metrics: http://$METRICS_ADDR/metrics).

  export KUBECONFIG=$KUBECONFIG
  $BIN/kubectl get nodes
  $BIN/kubectl apply -f config/samples/ray_v1_raycluster_minimal.yaml   # a Ray cluster that becomes ready
  $BIN/kubectl apply -f config/samples/trainer_v1alpha1_trainjob.yaml   # a TrainJob -> JobSet (no JobSet controller here)
  $BIN/kubectl get raycluster,trainjob,pods
  tail -f $STATE/manager.log                                            # manager logs

Stop everything with:  make run-down
MSG
}

down() {
  stop_manager
  if [ "${USE_EXISTING_CLUSTER:-false}" != "true" ] && [ -x "$BIN/kwokctl" ]; then
    if "$BIN/kwokctl" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
      mkdir -p "$STATE"
      kwokctl delete cluster --name "$CLUSTER"
      log "local control plane '$CLUSTER' deleted"
    fi
  fi
  rm -f "$STATE/kubeconfig-path"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
