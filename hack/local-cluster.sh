#!/usr/bin/env bash
# `make run` / `make run-down`: a local control plane (kwokctl's binary
# runtime: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# kwok's simulated nodes), the Gantry chart installed with helm, and the
# manager running on this machine as the chart's ServiceAccount.
#
# Pods that a Job owns run for a few seconds and succeed (hack/kwok/stages.yaml),
# and the real JobSet controller runs beside the manager
# (hack/jobset-local.sh), so TrainJobs run to Complete or Failed.
#
#   hack/local-cluster.sh up            start (idempotent) and print how to use it
#   hack/local-cluster.sh down          stop the managers and the control plane
#   hack/local-cluster.sh release-up    install one more release on the running
#                                       control plane and start its manager
#                                       (GANTRY_RELEASE, GANTRY_RELEASE_NAMESPACE,
#                                       GANTRY_WEBHOOK_PORT, GANTRY_PROBE_ADDR,
#                                       GANTRY_METRICS_ADDR, GANTRY_HELM_ARGS)
#   hack/local-cluster.sh release-down  stop that release's manager and uninstall it
#   hack/local-cluster.sh restart-manager  kill -9 the release's manager and start
#                                       it again (the e2e restart-safety spec)
#
# GANTRY_MANAGER=incluster runs the manager as the chart's Deployment instead
# (one replica, Gantry's image from `make image`, on the real node; the API
# server calls its webhooks through the chart's Service); its log is
# followed into .run/manager.log and .run/ports.env names its pod's probe
# and metrics addresses.
#
# USE_EXISTING_CLUSTER=true with KUBECONFIG set skips the local control plane
# and the chart: CRDs are applied and the manager runs with the caller's
# credentials and no webhooks (that API server cannot call this machine).
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
log() { echo "gantry-run: $*"; }

# The run's ports on 127.0.0.1 (the manager's, the JobSet controller's, and
# Kueue's in the e2e tier) are chosen by `up` and kept in $STATE/ports.env,
# lines of NAME=VALUE that the other commands, hack/e2e-local.sh and the e2e
# suite read: the usual ones (8080, 8081, 9443, ...) where they are free,
# else the first free block from 20000 on, so that two checkouts run side
# by side. A variable set in the environment wins over the file.
PORTS_FILE=$STATE/ports.env
port_names=(GANTRY_METRICS_ADDR GANTRY_PROBE_ADDR GANTRY_WEBHOOK_PORT GANTRY_TRAINJOB_STATUS_PORT JOBSET_WEBHOOK_PORT
  JOBSET_METRICS_ADDR JOBSET_PROBE_ADDR KUEUE_WEBHOOK_PORT KUEUE_PROBE_ADDR)
usual_ports=(8080 8081 9443 10443 9445 8095 8096 9447 8098)
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
choose_ports() {
  local base ports i busy
  for base in usual $(seq 20000 20 21980); do
    if [ "$base" = usual ]; then
      ports=("${usual_ports[@]}")
    else
      ports=()
      for i in "${!port_names[@]}"; do ports+=($((base + i))); done
    fi
    busy=
    for i in "${ports[@]}"; do
      if port_in_use "$i"; then busy=$i; break; fi
    done
    [ -z "$busy" ] && break
  done
  [ -z "$busy" ] || { log "no free block of ${#port_names[@]} ports on 127.0.0.1"; exit 1; }
  mkdir -p "$STATE"
  for i in "${!port_names[@]}"; do
    case ${port_names[$i]} in
      *_ADDR) echo "${port_names[$i]}=127.0.0.1:${ports[$i]}" ;;
      *) echo "${port_names[$i]}=${ports[$i]}" ;;
    esac
  done >"$PORTS_FILE"
  [ "$base" = usual ] || log "the usual ports are taken (another run?): this run uses ${ports[0]}-${ports[-1]} ($PORTS_FILE)"
}
load_ports() {
  local name value
  [ -f "$PORTS_FILE" ] || return 0
  while IFS='=' read -r name value; do
    [ -n "$name" ] && [ -z "${!name:-}" ] && export "$name=$value"
  done <"$PORTS_FILE"
  return 0
}
# A new run (no control plane in this checkout yet) chooses afresh: the
# ports of an earlier one may have been taken since.
if [ "${1:-}" = up ] && ! { [ -f "$PORTS_FILE" ] && [ -f "$STATE/kubeconfig-path" ]; }; then
  choose_ports
fi
load_ports

METRICS_ADDR=${GANTRY_METRICS_ADDR:-127.0.0.1:8080}
PROBE_ADDR=${GANTRY_PROBE_ADDR:-127.0.0.1:8081}
MANAGER_ARGS=${GANTRY_MANAGER_ARGS:-}
WEBHOOK_PORT=${GANTRY_WEBHOOK_PORT:-9443}
# The TrainJob progress endpoint (served with the TrainJobStatus gate on).
TRAINJOB_STATUS_PORT=${GANTRY_TRAINJOB_STATUS_PORT:-10443}
RELEASE=${GANTRY_RELEASE:-gantry}
RELEASE_NS=${GANTRY_RELEASE_NAMESPACE:-gantry-system}
# Extra `helm install` arguments, e.g. --set 'controllers={raycluster}'.
HELM_ARGS=${GANTRY_HELM_ARGS:-}
# The default release keeps its manager's files in .run/ (manager.log,
# manager.pid, ...); further releases in .run/release-<name>/.
if [ "$RELEASE" = gantry ]; then RSTATE=$STATE; else RSTATE=$STATE/release-$RELEASE; fi

# kwokctl logs JSON lines; keep them in a file and show them only on failure.
kwokctl() {
  if ! "$BIN/kwokctl" "$@" >>"$STATE/kwokctl.log" 2>&1; then
    log "kwokctl $* failed; last log lines:"; tail -n 20 "$STATE/kwokctl.log" >&2
    return 1
  fi
}
kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }

# wait_established waits until every CRD in $1 is Established. kubectl wait
# exits at once, instead of waiting, when a CRD has no status.conditions
# yet; retry until Established or a minute passed.
wait_established() {
  for _ in $(seq 1 60); do
    kubectl wait --for=condition=Established --timeout=30s -f "$1" >/dev/null 2>&1 && return 0
    sleep 1
  done
  log "CRDs in $1 did not become Established"; exit 1
}

local_kubeconfig() {
  if [ "${USE_EXISTING_CLUSTER:-false}" = "true" ]; then
    : "${KUBECONFIG:?USE_EXISTING_CLUSTER=true needs KUBECONFIG}"
  else
    export KUBECONFIG=$KWOK_WORKDIR/clusters/$CLUSTER/kubeconfig.yaml
  fi
}

manager_running() {
  [ -f "$RSTATE/manager.pid" ] && kill -0 "$(cat "$RSTATE/manager.pid")" 2>/dev/null
}

stop_manager() {
  if [ -f "$RSTATE/manager-log.pid" ]; then
    kill "$(cat "$RSTATE/manager-log.pid")" 2>/dev/null || true
    rm -f "$RSTATE/manager-log.pid"
  fi
  if manager_running; then
    local pid
    pid=$(cat "$RSTATE/manager.pid")
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" || true; fi
    log "manager of release $RELEASE (pid $pid) stopped"
  fi
  rm -f "$RSTATE/manager.pid"
}

# start_manager runs bin/manager in the background with the given flags
# plus this machine's probe and metrics addresses (later flags win).
start_manager() {
  mkdir -p "$RSTATE"
  # shellcheck disable=SC2086
  nohup "$BIN/manager" "$@" \
    --metrics-bind-address="$METRICS_ADDR" --health-probe-bind-address="$PROBE_ADDR" \
    --zap-devel $MANAGER_ARGS >>"$RSTATE/manager.log" 2>&1 &
  echo $! >"$RSTATE/manager.pid"
}

wait_manager_ready() {
  for _ in $(seq 1 240); do
    if ! manager_running; then
      log "the manager of release $RELEASE exited; last log lines:"; tail -n 30 "$RSTATE/manager.log"; exit 1
    fi
    if curl -fsS "http://$PROBE_ADDR/readyz" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "the manager of release $RELEASE did not become ready within 2 minutes; see $RSTATE/manager.log"
  curl -sS "http://$PROBE_ADDR/readyz?verbose" || true
  exit 1
}

# install_chart installs (or upgrades) charts/gantry the way a cluster admin
# would, with the webhooks pointed at this machine's manager by URL. The
# chart's Deployment is scaled to 0: the manager that runs is the one on
# this machine (kwok would only pretend to run the image).
install_chart() {
  mkdir -p "$RSTATE"
  # One step, as an admin types it: the manager installs the shipped
  # ClusterTrainingRuntimes from the chart's ConfigMap.
  helm_upgrade
  wait_established config/crd/bases
  log "installed the Gantry chart as release '$RELEASE' in namespace $RELEASE_NS"
}

helm_upgrade() {
  local -a where=(--set replicas=0 --set "webhook.url=https://localhost:$WEBHOOK_PORT")
  if in_cluster; then
    # One replica of Gantry's image on the real node; the API server calls
    # the webhooks through the chart's Service.
    where=(--set replicas=1 --set-json 'nodeSelector={"gantry.dev/real-node":"true"}'
      --set-json 'tolerations=[{"key":"gantry.dev/real-node","operator":"Equal","value":"true","effect":"NoSchedule"}]'
      --set featureGates.SlurmrestdURLOverride=true --set featureGates.RayDashboardURLOverride=true
      --set featureGates.TrainJobElasticPyTorch=true)
    # The real node routes nothing to kwok's Pod IPs (hack/realnode.sh), so
    # the heads kwokray serves are reached through the API server, on this
    # machine, as the local manager reaches them.
    if kwokray_running; then where+=(--set raycluster.useKubernetesProxy=true); fi
  fi
  # shellcheck disable=SC2086
  "$BIN/helm" --kubeconfig "$KUBECONFIG" upgrade --install "$RELEASE" charts/gantry \
    --namespace "$RELEASE_NS" --create-namespace "${where[@]}" \
    $HELM_ARGS >>"$RSTATE/helm.log" 2>&1 || { log "helm install of $RELEASE failed:"; tail -n 20 "$RSTATE/helm.log"; exit 1; }
}

# in_cluster says whether this release's manager is the chart's Deployment
# on the real node (GANTRY_MANAGER=incluster, the default release only)
# rather than a process on this machine.
in_cluster() { [ "${GANTRY_MANAGER:-local}" = incluster ] && [ "$RELEASE" = gantry ]; }

# run_in_cluster_manager waits for the chart's Deployment, follows its log
# into $RSTATE/manager.log (what `make run` and the e2e suite read) and
# points the run's probe and metrics addresses at its pod.
run_in_cluster_manager() {
  local deploy pod ip status_port
  deploy=$(kubectl -n "$RELEASE_NS" get deployment -l "app.kubernetes.io/instance=$RELEASE" \
    -o jsonpath='{.items[?(@.spec.template.metadata.labels.app\.kubernetes\.io/component=="manager")].metadata.name}')
  [ -n "$deploy" ] || { log "release $RELEASE has no manager Deployment"; exit 1; }
  if ! kubectl -n "$RELEASE_NS" rollout status "deployment/$deploy" --timeout=3m >/dev/null; then
    log "the in-cluster manager did not become ready:"
    kubectl -n "$RELEASE_NS" describe pods -l "app.kubernetes.io/instance=$RELEASE" | tail -n 30
    exit 1
  fi
  pod=$(kubectl -n "$RELEASE_NS" get pods -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=manager" \
    --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')
  ip=$(kubectl -n "$RELEASE_NS" get pod "$pod" -o jsonpath='{.status.podIP}')
  nohup "$BIN/kubectl" --kubeconfig "$KUBECONFIG" -n "$RELEASE_NS" logs -f "$pod" --timestamps >>"$RSTATE/manager.log" 2>&1 &
  echo $! >"$RSTATE/manager-log.pid"
  METRICS_ADDR=$ip:$(kubectl -n "$RELEASE_NS" get deployment "$deploy" -o jsonpath='{.spec.template.spec.containers[0].ports[?(@.name=="metrics")].containerPort}')
  PROBE_ADDR=$ip:8081
  sed -i -e "s|^GANTRY_METRICS_ADDR=.*|GANTRY_METRICS_ADDR=$METRICS_ADDR|" -e "s|^GANTRY_PROBE_ADDR=.*|GANTRY_PROBE_ADDR=$PROBE_ADDR|" \
    -e "/^GANTRY_TRAINJOB_STATUS_ADDR=/d" "$PORTS_FILE"
  metrics_access "$(kubectl -n "$RELEASE_NS" get deployment "$deploy" -o jsonpath='{.spec.template.spec.containers[0].args}')"
  # The TrainJob progress endpoint, where the TrainJobStatus gate serves it.
  status_port=$(kubectl -n "$RELEASE_NS" get deployment "$deploy" -o jsonpath='{.spec.template.spec.containers[0].ports[?(@.name=="trainjob-status")].containerPort}')
  [ -z "$status_port" ] || echo "GANTRY_TRAINJOB_STATUS_ADDR=$ip:$status_port" >>"$PORTS_FILE"
  for _ in $(seq 1 60); do curl -fsS "http://$PROBE_ADDR/readyz" >/dev/null 2>&1 && break; sleep 0.5; done
  curl -fsS "http://$PROBE_ADDR/readyz" >/dev/null || { log "the in-cluster manager's probe at $PROBE_ADDR does not answer"; exit 1; }
  log "the manager of release $RELEASE runs in the cluster: pod $pod on $(kubectl -n "$RELEASE_NS" get pod "$pod" -o jsonpath='{.spec.nodeName}'), as the chart's ServiceAccount"
}

# manager_kubeconfig writes a kubeconfig that authenticates as the chart's
# ServiceAccount with a bound token, so the manager has exactly the chart's
# permissions (never the admin's).
manager_kubeconfig() {
  local server ca token sa
  sa=$(kubectl -n "$RELEASE_NS" get deployment "$1" -o jsonpath='{.spec.template.spec.serviceAccountName}')
  server=$(kubectl config view --raw --minify --flatten -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kubectl config view --raw --minify --flatten -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  token=$(kubectl -n "$RELEASE_NS" create token "$sa" --duration=48h)
  (
    umask 077
    cat >"$RSTATE/manager.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $sa
  user:
    token: $token
contexts:
- name: $sa
  context:
    cluster: local
    user: $sa
    namespace: $RELEASE_NS
current-context: $sa
KUBECONFIG
  )
  log "the manager of release $RELEASE authenticates as system:serviceaccount:$RELEASE_NS:$sa"
}

# release_up installs a release and runs its manager with the flags the
# chart gives its Deployment, as the chart's ServiceAccount, so every request
# goes through the chart's RBAC, and the API server calls its webhooks at
# https://localhost:$WEBHOOK_PORT (the chart's webhook.url).
release_up() {
  stop_manager
  install_chart
  : >"$RSTATE/manager.log"
  if in_cluster; then
    run_in_cluster_manager
  else
    run_release_manager
  fi
}

# metrics_access records in $PORTS_FILE how to read the manager's metrics,
# given its arguments: with --metrics-secure (the chart's default) as a
# Prometheus would, over HTTPS with the token of a ServiceAccount bound to
# the chart's metrics-reader ClusterRole; else plain HTTP.
metrics_access() {
  sed -i -e "/^GANTRY_METRICS_SCHEME=/d" -e "/^GANTRY_METRICS_TOKEN=/d" "$PORTS_FILE"
  unset GANTRY_METRICS_SCHEME GANTRY_METRICS_TOKEN
  grep -q -- '--metrics-secure' <<<"$1" || return 0
  local reader token
  reader=$(kubectl get clusterrole -l "app.kubernetes.io/instance=$RELEASE" -o name | grep -- '-metrics-reader$' | head -n 1)
  [ -n "$reader" ] || { log "the manager serves metrics securely but release $RELEASE has no metrics-reader ClusterRole"; exit 1; }
  kubectl -n "$RELEASE_NS" create serviceaccount gantry-metrics-reader --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl create clusterrolebinding "$RELEASE-metrics-reader-local" --clusterrole="${reader#clusterrole.rbac.authorization.k8s.io/}" \
    --serviceaccount="$RELEASE_NS:gantry-metrics-reader" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  token=$(kubectl -n "$RELEASE_NS" create token gantry-metrics-reader --duration=24h)
  printf 'GANTRY_METRICS_SCHEME=https\nGANTRY_METRICS_TOKEN=%s\n' "$token" >>"$PORTS_FILE"
  export GANTRY_METRICS_SCHEME=https GANTRY_METRICS_TOKEN="$token"
}

# kwokray_up starts hack/kwokray: a stand-in Ray dashboard and Serve proxy
# for every Ray head on a kwok node, reached at the head's IP (routed to
# this machine), and the submitter of their RayJobs, so that RayJobs and
# RayServices there reach their end states. Routing needs root; elsewhere
# it says why not and those RayJobs wait for a dashboard. $PORTS_FILE
# records the outcome for the e2e suite (GANTRY_KWOK_RAY, or
# GANTRY_KWOK_RAY_SKIP_REASON).
kwokray_up() {
  sed -i -e "/^GANTRY_KWOK_RAY=/d" -e "/^GANTRY_KWOK_RAY_SKIP_REASON=/d" "$PORTS_FILE"
  local why=""
  if [ "$(id -u)" != 0 ]; then
    why="it routes the heads' IPs to this machine, which needs root"
  elif ! command -v ip >/dev/null 2>&1; then
    why="it routes the heads' IPs with ip (iproute2), which is not installed"
  fi
  if [ -n "$why" ]; then
    log "no stand-in Ray dashboard for heads on simulated nodes: $why; RayJobs and RayServices there wait for a dashboard"
    echo "GANTRY_KWOK_RAY_SKIP_REASON=$why" >>"$PORTS_FILE"
    return 0
  fi
  kwokray_down
  : >"$STATE/kwokray.log"
  nohup "$BIN/kwokray" --kubeconfig "$KUBECONFIG" >>"$STATE/kwokray.log" 2>&1 &
  echo $! >"$STATE/kwokray.pid"
  local pid=$!
  for _ in $(seq 1 120); do
    grep -q '^kwokray: ready' "$STATE/kwokray.log" && break
    # Our own child, not a zombie, until it exits (a just-forked one may
    # not have exec'd yet, so its name is not checked).
    local ppid="" stat=""
    read -r ppid stat < <(ps -o ppid=,stat= -p "$pid" 2>/dev/null) || true
    [ "$ppid" = "$$" ] && [ "${stat#Z}" = "$stat" ] ||
      { log "kwokray exited; last log lines:"; tail -n 20 "$STATE/kwokray.log"; exit 1; }
    sleep 0.25
  done
  grep -q '^kwokray: ready' "$STATE/kwokray.log" ||
    { log "kwokray was not ready within 30 s; see $STATE/kwokray.log"; exit 1; }
  echo "GANTRY_KWOK_RAY=true" >>"$PORTS_FILE"
  log "kwokray: a stand-in Ray dashboard for every Ray head on a simulated node (log: $STATE/kwokray.log)"
}

kwokray_running() {
  [ -f "$STATE/kwokray.pid" ] && kill -0 "$(cat "$STATE/kwokray.pid")" 2>/dev/null
}

# kwokray_down stops it; it removes its routes as it exits, and the
# flush is repeated for one that was killed.
kwokray_down() {
  if kwokray_running; then
    local pid
    pid=$(cat "$STATE/kwokray.pid")
    kill -TERM "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE/kwokray.pid"
  if [ "$(id -u)" = 0 ] && [ -x "$BIN/kwokray" ]; then "$BIN/kwokray" --flush-routes >/dev/null 2>&1 || true; fi
}

# run_release_manager starts the release's manager with its Deployment's
# flags. The manager runs outside the cluster, so it may take slurmrestd's
# URL from a RestApi's gantry.dev/slurmrestd-url annotation
# (SlurmrestdURLOverride; the chart leaves it off), and a Ray dashboard URL
# from a RayCluster's gantry.dev/ray-dashboard-url (RayDashboardURLOverride).
# Elastic PyTorch (TrainJobElasticPyTorch, alpha) is on too, with JobSet's
# ElasticJobSet gate (hack/jobset-local.sh), so elastic TrainJobs can be
# tried and tested here. Where kwokray runs, the manager reaches Ray
# dashboards through the API server (--use-kubernetes-proxy, KubeRay's flag
# for an operator outside the cluster), which dials the head's IP.
run_release_manager() {
  local deploy
  deploy=$(kubectl -n "$RELEASE_NS" get deployment -l "app.kubernetes.io/instance=$RELEASE" \
    -o jsonpath='{.items[?(@.spec.template.metadata.labels.app\.kubernetes\.io/component=="manager")].metadata.name}')
  [ -n "$deploy" ] || { log "release $RELEASE has no manager Deployment"; exit 1; }
  local -a chart_args
  mapfile -t chart_args < <(kubectl -n "$RELEASE_NS" get deployment "$deploy" \
    -o go-template='{{range (index .spec.template.spec.containers 0).args}}{{.}}{{"\n"}}{{end}}')
  [ ${#chart_args[@]} -gt 0 ] || { log "the chart's Deployment has no manager arguments"; exit 1; }
  manager_kubeconfig "$deploy"
  if kwokray_running; then chart_args+=(--use-kubernetes-proxy); fi
  rm -rf "$RSTATE/certs"; mkdir -p "$RSTATE/certs"
  start_manager "${chart_args[@]}" --kubeconfig "$RSTATE/manager.kubeconfig" \
    --webhook-port="$WEBHOOK_PORT" --webhook-secret-namespace="$RELEASE_NS" \
    --webhook-dns-names=localhost --webhook-cert-write --webhook-cert-dir="$RSTATE/certs" \
    --trainjob-status-port="$TRAINJOB_STATUS_PORT" --feature-gates=SlurmrestdURLOverride=true,RayDashboardURLOverride=true,TrainJobElasticPyTorch=true
  wait_manager_ready
  metrics_access "${chart_args[*]}"
}

# restart_manager kills the release's manager without warning (SIGKILL: no
# lease release, no cleanup) and starts it again, as a crash and a restart
# by its Deployment would.
restart_manager() {
  if in_cluster; then
    restart_in_cluster_manager
    return
  fi
  if manager_running; then
    local pid
    pid=$(cat "$RSTATE/manager.pid")
    kill -KILL "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    log "manager of release $RELEASE (pid $pid) killed"
  fi
  rm -f "$RSTATE/manager.pid"
  echo "--- restarted by hack/local-cluster.sh restart-manager at $(date -u +%FT%TZ)" >>"$RSTATE/manager.log"
  run_release_manager
  log "manager of release $RELEASE restarted"
}

# restart_in_cluster_manager kills the manager container's process on the
# real node (SIGKILL through containerd, as a crash) and waits until the
# kubelet has restarted it and it is Ready again.
restart_in_cluster_manager() {
  local pod id restarts
  pod=$(kubectl -n "$RELEASE_NS" get pods -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=manager" \
    --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')
  id=$(kubectl -n "$RELEASE_NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}')
  restarts=$(kubectl -n "$RELEASE_NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')
  ctr --address "$STATE/realnode/containerd/containerd.sock" -n k8s.io tasks kill -s SIGKILL "${id#containerd://}" >/dev/null
  log "manager of release $RELEASE (container ${id#containerd://} of pod $pod) killed"
  for _ in $(seq 1 240); do
    [ "$(kubectl -n "$RELEASE_NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')" -gt "$restarts" ] && break
    sleep 0.5
  done
  kubectl -n "$RELEASE_NS" wait --for=condition=Ready "pod/$pod" --timeout=3m >/dev/null
  if [ -f "$RSTATE/manager-log.pid" ]; then kill "$(cat "$RSTATE/manager-log.pid")" 2>/dev/null || true; fi
  echo "--- restarted by hack/local-cluster.sh restart-manager at $(date -u +%FT%TZ)" >>"$RSTATE/manager.log"
  run_in_cluster_manager
  log "manager of release $RELEASE restarted by the kubelet"
}

release_down() {
  stop_manager
  "$BIN/helm" --kubeconfig "$KUBECONFIG" uninstall "$RELEASE" --namespace "$RELEASE_NS" --wait >>"$RSTATE/helm.log" 2>&1 || true
  log "release $RELEASE uninstalled"
}

# local_pvs creates 8 hostPath PersistentVolumes of 10Gi for PVCs to bind to
# (e.g. slurmctld's state in the Controller sample): the local control plane
# has no storage provisioner and no default StorageClass, and a PVC naming no
# class binds only to a PV whose storageClassName is "". Idempotent. On the real node a
# pod mounts one for real: its directory, under the run directory, is
# world-writable, as kind's local-path provisioner makes its volumes, since
# a hostPath volume ignores fsGroup and slurmctld (uid 401) must write its
# state there. A volume whose claim was deleted stays Released (reclaim
# policy Retain, no provisioner) until the next `up` empties it and makes it
# Available again; the e2e suite does so as it deletes each namespace.
local_pvs() {
  local i manifest="" pv
  for i in $(seq 0 7); do
    mkdir -p "$STATE/pv/$i"
    chmod 0777 "$STATE/pv/$i"
    manifest+="---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: gantry-local-pv-$i
  labels: {gantry.dev/local-pv: \"true\"}
spec:
  storageClassName: \"\"
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce, ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: $STATE/pv/$i, type: Directory}
"
  done
  kubectl apply -f - <<<"$manifest" >/dev/null
  # Emptied first: a pod on the real node may have written there, and
  # slurmctld refuses a state directory of another cluster.
  for pv in $(kubectl get pv -l gantry.dev/local-pv -o jsonpath='{.items[?(@.status.phase=="Released")].metadata.name}'); do
    find "$STATE/pv/${pv##*-}" -mindepth 1 -delete
    kubectl patch pv "$pv" --type=json -p='[{"op":"remove","path":"/spec/claimRef"}]' >/dev/null
  done
  log "8 local PersistentVolumes (hostPath, 10Gi, label gantry.dev/local-pv) for PVCs"
}

# real_node_wanted says whether `up` starts a real node beside kwok's
# (hack/realnode.sh): GANTRY_REAL_NODE=true needs it, false leaves it out,
# auto (the default) starts it where this machine can and says why not
# where it cannot.
real_node_wanted() {
  [ "${USE_EXISTING_CLUSTER:-false}" = "true" ] && return 1
  case "${GANTRY_REAL_NODE:-auto}" in
    false) return 1 ;;
    true) return 0 ;;
  esac
  local why
  if why=$(hack/realnode.sh check); then return 0; fi
  [ -f "$STATE/realnode-skipped" ] || log "no real node: $why (GANTRY_REAL_NODE=true makes this an error)"
  : >"$STATE/realnode-skipped"
  return 1
}

up() {
  mkdir -p "$STATE"
  rm -f "$STATE/realnode-skipped"
  local_kubeconfig
  if [ "${USE_EXISTING_CLUSTER:-false}" = "true" ]; then
    log "using the existing cluster in $KUBECONFIG"
  else
    if "$BIN/kwokctl" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
      log "local control plane '$CLUSTER' exists; starting it if stopped"
      kwokctl start cluster --name "$CLUSTER" || true
    else
      log "creating local control plane '$CLUSTER' (kwok, binary runtime)"
      local -a node_config=()
      if real_node_wanted; then
        # The real node's link exists before the API server, which
        # advertises (and names in its certificate) the host's end of it.
        hack/realnode.sh net "$KWOK_WORKDIR/clusters/$CLUSTER/pki" >"$STATE/kwokctl-realnode.yaml"
        node_config=(--config "$STATE/kwokctl-realnode.yaml")
      fi
      kwokctl create cluster --name "$CLUSTER" --runtime binary \
        --kubeconfig "" \
        --secure-port=true --kube-authorization=true \
        --config hack/kwok/stages.yaml "${node_config[@]}" \
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

  if [ "${USE_EXISTING_CLUSTER:-false}" = "true" ]; then
    # JobSet's CRDs (the TrainJob controller renders JobSets); the cluster
    # is expected to run JobSet's controller. Server-side apply: large CRDs
    # exceed the 256 KiB last-applied annotation of client-side apply.
    local jobset_crds
    jobset_crds="$(go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)/config/components/crd/bases"
    kubectl apply --server-side --force-conflicts --field-manager=gantry-run -f "$jobset_crds" >/dev/null
    wait_established "$jobset_crds"
    stop_manager
    kubectl apply --server-side --force-conflicts --field-manager=gantry-run -f config/crd/bases >/dev/null
    wait_established config/crd/bases
    kubectl apply --server-side --force-conflicts --field-manager=gantry-run -k config/runtimes >/dev/null
    log "installed Gantry's CRDs and the shipped training runtimes"
    : >"$RSTATE/manager.log"
    start_manager --kubeconfig "$KUBECONFIG" --webhook-port=0
    wait_manager_ready
    metrics_access ""
  else
    local_pvs
    if in_cluster && ! real_node_wanted; then
      log "GANTRY_MANAGER=incluster runs the manager on the real node, which this run has not (GANTRY_REAL_NODE=${GANTRY_REAL_NODE:-auto})"
      exit 1
    fi
    if real_node_wanted; then
      KUBECONFIG=$KUBECONFIG GANTRY_KWOK_PKI=$KWOK_WORKDIR/clusters/$CLUSTER/pki BIN=$BIN \
        hack/realnode.sh up 2>&1 | sed 's/^/gantry-run: /'
      [ "${PIPESTATUS[0]}" = 0 ] || exit 1
    fi
    # The real JobSet controller (pinned version), its CRDs and webhooks,
    # running on this machine like the manager.
    BIN=$BIN JOBSET_STATE_DIR=$STATE/jobset hack/jobset-local.sh up | sed 's/^/gantry-run: /'
    kwokray_up
    release_up
  fi
  echo "$KUBECONFIG" >"$STATE/kubeconfig-path"

  cat <<MSG

Gantry is running (manager ready: http://$PROBE_ADDR/readyz, metrics: ${GANTRY_METRICS_SCHEME:-http}://$METRICS_ADDR/metrics${GANTRY_METRICS_TOKEN:+, read with -k and the bearer token GANTRY_METRICS_TOKEN in $PORTS_FILE}).

  export KUBECONFIG=$KUBECONFIG
  $BIN/kubectl get nodes
  $BIN/kubectl apply -f config/samples/ray_v1_raycluster_minimal.yaml   # a Ray cluster that becomes ready
  $BIN/kubectl apply -f config/samples/trainer_v1alpha1_trainjob.yaml   # a TrainJob that runs to Complete
  $BIN/kubectl apply -f config/samples/ray_v1_rayjob.yaml               # a RayJob that runs to Complete (needs kwokray: root)
  $BIN/kubectl get trainjob,jobset,jobs,pods -w                         # watch it: Created -> Running -> Complete
  $BIN/kubectl get raycluster,trainjob,pods
  tail -f $STATE/manager.log                                            # manager logs

Stop everything with:  make run-down
MSG
}

down() {
  kwokray_down
  hack/realnode.sh down 2>&1 | sed 's/^/gantry-run: /'
  if [ "${USE_EXISTING_CLUSTER:-false}" != "true" ]; then
    local_kubeconfig
    BIN=$BIN JOBSET_STATE_DIR=$STATE/jobset hack/jobset-local.sh down >/dev/null 2>&1 || true
  fi
  local dir f
  for f in "$STATE"/manager-log.pid "$STATE"/release-*/manager-log.pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
  for pidfile in "$STATE"/manager.pid "$STATE"/release-*/manager.pid; do
    [ -f "$pidfile" ] || continue
    dir=$(dirname "$pidfile")
    if [ "$dir" = "$STATE" ]; then RELEASE=gantry; else RELEASE=${dir##*/release-}; fi
    RSTATE=$dir stop_manager
  done
  if [ "${USE_EXISTING_CLUSTER:-false}" != "true" ] && [ -x "$BIN/kwokctl" ]; then
    if "$BIN/kwokctl" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
      mkdir -p "$STATE"
      kwokctl delete cluster --name "$CLUSTER"
      log "local control plane '$CLUSTER' deleted"
    fi
    # What pods on the real node wrote into the local PersistentVolumes.
    rm -rf "$STATE/pv"
  fi
  rm -f "$STATE/kubeconfig-path" "$PORTS_FILE"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  release-up) local_kubeconfig; release_up ;;
  release-down) local_kubeconfig; release_down ;;
  restart-manager) local_kubeconfig; restart_manager ;;
  *) echo "usage: $0 up|down|release-up|release-down|restart-manager" >&2; exit 2 ;;
esac
