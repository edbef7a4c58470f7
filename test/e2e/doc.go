// Package e2e holds Gantry's end-to-end suite (Ginkgo v2): the manager
// binary, a real kube-scheduler, kube-controller-manager (garbage
// collector, namespace controller, StatefulSet controller) and nodes that
// run pods. The specs are behind the build tag "e2e", so `go test ./...` and
// `make test` never run them; `make test-e2e` starts the local control
// plane of `make run`, runs them with the ginkgo CLI in parallel processes
// and stops it again. suite_test.go lists the conventions and helpers.
//
// The specs talk to whatever cluster KUBECONFIG points at. Assumptions:
//   - Gantry's CRDs, JobSet's CRDs and the shipped ClusterTrainingRuntimes
//     are installed and a Gantry manager is running against the cluster.
//   - Pods of the samples become Running and Ready. kwok's simulated nodes
//     do that for any image; on a real cluster (kind) the Ray images must
//     pull and start, and the Slurm spec needs slurmd images that reach
//     Ready without a reachable slurmctld, so it skips there (as do the
//     other specs that steer pods through kwok's stages).
//   - The TrainJob specs that run to completion need the JobSet controller
//     (`make run` and the chart's jobset.install=true run it).
//   - The manager's probe and metrics addresses (GANTRY_PROBE_ADDR,
//     GANTRY_METRICS_ADDR, else those in .run/ports.env that `make run`
//     chose, else 127.0.0.1:8081 and :8080) are reachable
//     only when the manager runs on this machine; otherwise that spec skips.
package e2e
