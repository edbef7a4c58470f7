#!/usr/bin/env bash
# `make test-e2e` on the local control plane: starts `make run`'s cluster,
# real Kueue (hack/kueue-local.sh) and a real Slurm (slurmctld + slurmrestd
# from test/slurm/start.sh, which the Slurm specs reach through the RestApi
# endpoint override), runs the ginkgo command given as arguments against
# them, and stops all of them on every exit path. The exit status is the
# suite's. GANTRY_MANAGER=incluster runs the manager as the chart's
# Deployment on the real node (hack/local-cluster.sh) and the same suite
# against it.
#
# Real Slurm needs root and debootstrap (CI has both). Where start.sh says it
# cannot run here (exit 3), the real-Slurm specs skip and print its reason;
# any other failure to start Slurm fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 <ginkgo command...>" >&2; exit 2; }

cleanup() {
  test/slurm/stop.sh >/dev/null 2>&1 || true
  KUBECONFIG="$(cat .run/kubeconfig-path 2>/dev/null)" hack/kueue-local.sh down >/dev/null 2>&1 || true
  make --no-print-directory run-down
}
trap cleanup EXIT

# The e2e tier also covers the alpha TrainJobStatus gate (the progress
# endpoint); `make run` alone leaves it off, as the chart does.
GANTRY_HELM_ARGS="${GANTRY_HELM_ARGS:-} --set featureGates.TrainJobStatus=true" make --no-print-directory run
export GANTRY_TRAINJOB_STATUS=true
# The ports this run chose (hack/local-cluster.sh): Kueue's below, and the
# manager's probe and metrics addresses for the suite.
while IFS='=' read -r name value; do
  [ -n "$name" ] && [ -z "${!name:-}" ] && export "$name=$value"
done <.run/ports.env

# Real Kueue for the kueue specs: only its RayCluster and TrainJob
# integrations, and only for objects that name a queue.
KUEUE_STATE_DIR=.run/kueue KUBECONFIG="$(cat .run/kubeconfig-path)" hack/kueue-local.sh up | sed 's/^/e2e: /'
export GANTRY_KUEUE=true

mkdir -p .run
# An in-cluster manager (GANTRY_MANAGER=incluster) reaches this machine only
# at the real node's host address: slurmrestd listens there.
if [ "${GANTRY_MANAGER:-local}" = incluster ]; then
  SLURMRESTD_ADDR=$(hack/realnode.sh host-ip)
  export SLURMRESTD_ADDR
fi
status=0
slurm_env=$(test/slurm/start.sh 2>.run/slurm-start.log) || status=$?
case $status in
  0)
    while IFS= read -r line; do
      [ -n "$line" ] && export "${line?}"
    done <<<"$slurm_env"
    echo "e2e: real Slurm at $GANTRY_SLURM_URL (log: .run/slurm-start.log)"
    ;;
  3)
    GANTRY_SLURM_SKIP_REASON=$(tail -n 1 .run/slurm-start.log)
    export GANTRY_SLURM_SKIP_REASON
    echo "e2e: the real-Slurm specs will skip: $GANTRY_SLURM_SKIP_REASON"
    ;;
  *)
    echo "e2e: starting Slurm failed; last lines of .run/slurm-start.log:" >&2
    tail -n 30 .run/slurm-start.log >&2
    exit 1
    ;;
esac

KUBECONFIG="$(cat .run/kubeconfig-path)" "$@"
