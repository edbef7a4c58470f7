//go:build benchcompare

package benchcompare

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/test/bench"
	"github.com/gantry-dev/gantry/test/testenv"
)

// The client rate limit every operator gets, so none is faster for being
// allowed more requests (KubeRay's and Gantry's defaults; Trainer's are
// 50/100).
const qps, burst = 100, 200

// workers is BENCH_COMPARE_WORKERS: how many reconciles of its workload
// each operator runs at once, through its own setting (Gantry's
// --max-concurrent-reconciles, KubeRay's --reconcile-concurrency,
// Trainer's groupKindConcurrency for TrainJob, Slinky's --nodeset-workers).
// Unset (0), each runs what it ships: Gantry's defaults (5 TrainJob
// workers, 1 for the others), KubeRay's and Slinky's 1, Trainer's 5.
func workers() int { return bench.EnvPositive("BENCH_COMPARE_WORKERS", 0) }

// workersFlag is flag=k when BENCH_COMPARE_WORKERS sets k, else nothing.
func workersFlag(flag string) []string {
	if k := workers(); k > 0 {
		return []string{fmt.Sprintf("%s=%d", flag, k)}
	}
	return nil
}

// operator is one side of a pairing.
type operator struct {
	name string
	// install applies what the operator needs in a new cluster: its CRDs
	// and, for the TrainJob pairing, its training runtimes.
	install func(t *testing.T, cl *cluster)
	// args are the command line of the operator's binary, given the
	// kubeconfig it must use, a scratch directory and the addresses its
	// readiness probe (/readyz) and its Prometheus metrics (plain HTTP)
	// listen on.
	args func(t *testing.T, kubeconfig, dir, probeAddr, metricsAddr string) (bin string, args, env []string)
	// pprofFlag is the flag that serves Go's /debug/pprof on an address,
	// when the operator has one.
	pprofFlag string
	// unlimited: the operator cannot be given the client rate limit.
	unlimited bool
	// extra are flags a pairing adds to the operator's command line.
	extra []string
}

// with is op with the flags extra added to its command line.
func (op operator) with(extra ...string) operator {
	op.extra = append(slices.Clone(op.extra), extra...)
	return op
}

// start runs op against kubeconfig (the counting proxy) and waits until its
// /readyz answers 200. It returns the process and its metrics address.
func (op operator) start(t *testing.T, kubeconfig []byte, extraArgs ...string) (*testenv.ManagerProcess, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	probe, metrics := testenv.FreeAddr(t), testenv.FreeAddr(t)
	binPath, args, env := op.args(t, path, dir, probe, metrics)
	args = append(append(args, op.extra...), extraArgs...)
	proc, err := testenv.StartProcess(binPath, args, append(env, "KUBECONFIG="+path), filepath.Join(dir, "operator.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)
	if err := proc.WaitReady(probe, 2*time.Minute); err != nil {
		t.Fatalf("%s did not become ready: %v", op.name, err)
	}
	return proc, metrics
}

// moduleDir is where the Go module cache holds mod@version, downloaded by
// `make bench-compare`'s build of the operator from the tools module dir.
func moduleDir(t *testing.T, toolsDir, mod string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod)
	cmd.Dir = filepath.Join(testenv.RepoRoot(), "test", "tools", toolsDir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s in test/tools/%s: %v", mod, toolsDir, err)
	}
	return strings.TrimSpace(string(out))
}

// gantry is bin/manager running only the named controller, webhooks off
// (no upstream operator here is given its webhooks either).
func gantry(controller string) operator {
	return operator{
		name: "Gantry", pprofFlag: "--pprof-bind-address",
		install: func(t *testing.T, cl *cluster) {
			crds := filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")
			cl.apply(t, "-f", crds)
			cl.waitEstablished(t)
			if controller == "trainjob" {
				cl.apply(t, "-k", filepath.Join(testenv.RepoRoot(), "config", "runtimes"))
			}
		},
		args: func(t *testing.T, kubeconfig, _, probe, metrics string) (string, []string, []string) {
			return bin("manager"), append([]string{"--kubeconfig", kubeconfig, "--controllers", controller,
				"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probe, "--webhook-port=0",
				"--zap-log-level=error", fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", burst)},
				workersFlag("--max-concurrent-reconciles")...), nil
		},
	}
}

// kuberay is KubeRay's ray-operator at the version test/tools/kuberay pins,
// with leader election off (Gantry's default) and its CRDs from the module.
// --enable-metrics turns on the per-cluster metrics (kuberay_cluster_info
// and its kin), off by default in KubeRay and always on in Gantry, so that
// both sides keep the same series.
func kuberay() operator {
	const mod = "github.com/ray-project/kuberay/ray-operator"
	return operator{
		name: "KubeRay",
		install: func(t *testing.T, cl *cluster) {
			crds := filepath.Join(moduleDir(t, "kuberay", mod), "config", "crd", "bases")
			cl.apply(t, "-f", crds)
			cl.waitEstablished(t)
		},
		args: func(t *testing.T, kubeconfig, _, probe, metrics string) (string, []string, []string) {
			return bin("kuberay-operator"), append([]string{"--enable-leader-election=false", "--metrics-addr=" + metrics,
				"--health-probe-bind-address=" + probe, fmt.Sprintf("--qps=%d", qps), fmt.Sprintf("--burst=%d", burst),
				"--log-stdout-encoder=console", "--zap-log-level=error", "--enable-metrics"},
				workersFlag("--reconcile-concurrency")...), nil
		},
	}
}

// trainer is Kubeflow Trainer's controller manager at the version
// test/tools/trainer pins, with its CRDs and runtimes from the module. Its
// webhook server cannot be turned off; it serves a throwaway certificate
// that no webhook configuration points at.
func trainer() operator {
	const mod = "github.com/kubeflow/trainer/v2"
	return operator{
		name: "Trainer",
		install: func(t *testing.T, cl *cluster) {
			dir := moduleDir(t, "trainer", mod)
			crds := filepath.Join(dir, "manifests", "base", "crds")
			cl.apply(t, "-k", crds)
			cl.waitEstablished(t)
			cl.apply(t, "-k", filepath.Join(dir, "manifests", "base", "runtimes"))
		},
		args: func(t *testing.T, kubeconfig, dir, probe, metrics string) (string, []string, []string) {
			webhookPort := port(testenv.FreeAddr(t))
			config := filepath.Join(dir, "config.yaml")
			// Unless BENCH_COMPARE_WORKERS says otherwise, 5 TrainJob
			// workers: what Trainer's manifests and chart ship (its
			// binary's default, without a configuration, is 1).
			trainJobWorkers := 5
			if k := workers(); k > 0 {
				trainJobWorkers = k
			}
			if err := os.WriteFile(config, fmt.Appendf(nil, `apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
webhook: {host: 127.0.0.1, port: %s}
metrics: {bindAddress: %q, secureServing: false}
health: {healthProbeBindAddress: %q}
certManagement: {enable: false}
clientConnection: {qps: %d, burst: %d}
leaderElection: {leaderElect: false}
controller: {groupKindConcurrency: {TrainJob.trainer.kubeflow.org: %d}}
`, webhookPort, metrics, probe, qps, burst, trainJobWorkers), 0o600); err != nil {
				t.Fatal(err)
			}
			// controller-runtime's webhook server reads its certificate from
			// $TMPDIR/k8s-webhook-server/serving-certs.
			testenv.WriteServingCert(t, filepath.Join(dir, "k8s-webhook-server", "serving-certs"))
			return bin("trainer-controller-manager"), []string{"--config", config, "--zap-log-level=error"},
				[]string{"TMPDIR=" + dir}
		},
	}
}

// slinky is Slinky's slurm-operator at the version test/tools/slinky pins
// (v1.1.0: the newest release the module proxy serves here; Gantry's
// Slurm API follows v1.2.1, with the same group and version), with its
// CRDs from the module. It has no flag for the client rate limit:
// controller-runtime (v0.23) then turns client-side limiting off (QPS -1),
// so it runs unlimited where Gantry has 100/200.
func slinky() operator {
	const mod = "github.com/SlinkyProject/slurm-operator"
	return operator{
		name: "Slinky", unlimited: true,
		install: func(t *testing.T, cl *cluster) {
			cl.apply(t, "-f", filepath.Join(moduleDir(t, "slinky", mod), "config", "crd", "bases"))
			cl.waitEstablished(t)
		},
		args: func(t *testing.T, kubeconfig, _, probe, metrics string) (string, []string, []string) {
			return bin("slurm-operator"), append([]string{"--kubeconfig", kubeconfig, "--leader-elect=false",
				"--metrics-addr=" + metrics, "--health-addr=" + probe, "--zap-log-level=error"},
				workersFlag("--nodeset-workers")...), nil
		},
	}
}
