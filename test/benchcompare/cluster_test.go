//go:build benchcompare

package benchcompare

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/test/bench"
	"github.com/gantry-dev/gantry/test/testenv"
)

// cluster is one fresh local control plane: kwokctl's binary runtime (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok's
// simulated nodes), the one `make run` uses, so Pods are scheduled and
// become Ready and Jobs run to completion.
type cluster struct {
	name, workdir string
	kubeconfig    string
	cfg           *rest.Config
	c             client.Client
}

func bin(name string) string { return filepath.Join(testenv.RepoRoot(), "bin", name) }

// startCluster creates the control plane with nodes simulated nodes; it is
// deleted when t ends.
func startCluster(t *testing.T, name string, nodes int) *cluster {
	t.Helper()
	cl := &cluster{name: name, workdir: t.TempDir()}
	root := testenv.RepoRoot()
	configs := []string{"--config", filepath.Join(root, "hack", "kwok", "stages.yaml")}
	if patches := componentPatches(); patches != "" {
		path := filepath.Join(cl.workdir, "components.yaml")
		if err := os.WriteFile(path, []byte(patches), 0o644); err != nil {
			t.Fatal(err)
		}
		configs = append(configs, "--config", path)
	}
	cl.kwokctl(t, append(append([]string{"create", "cluster", "--name", name, "--runtime", "binary", "--kubeconfig", "",
		"--secure-port=true", "--kube-authorization=true"}, configs...),
		"--kube-apiserver-binary", bin("kube-apiserver"),
		"--kube-controller-manager-binary", bin("kube-controller-manager"),
		"--kube-scheduler-binary", bin("kube-scheduler"),
		"--etcd-binary", bin("etcd"), "--kwok-controller-binary", bin("kwok"),
		"--wait", "2m")...)
	t.Cleanup(func() { cl.kwokctl(t, "delete", "cluster", "--name", name) })
	cl.kwokctl(t, "--name", name, "scale", "node", "--replicas", fmt.Sprint(nodes))
	cl.kubeconfig = filepath.Join(cl.workdir, "clusters", name, "kubeconfig.yaml")
	cfg, err := clientcmd.BuildConfigFromFlags("", cl.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000 // the harness's reads must not be what is slow
	cl.cfg = cfg
	if cl.c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	cl.waitNodesSchedulable(t, nodes)
	return cl
}

// waitNodesSchedulable waits until the cluster has nodes nodes, each Ready
// and without a taint. kwok makes the nodes `kwokctl scale` created Ready a
// few at a time, and the node lifecycle controller lifts their
// node.kubernetes.io/not-ready taint later still: 1,002 nodes took 100 s,
// so an operator that made its Pods at once waited on the simulated
// nodes, not on anything it did.
func (cl *cluster) waitNodesSchedulable(t *testing.T, nodes int) {
	t.Helper()
	start := time.Now()
	notYet := 0
	err := bench.Poll(time.Second, 10*time.Minute, func() (bool, error) {
		var list corev1.NodeList
		if err := cl.c.List(context.Background(), &list); err != nil {
			return false, err
		}
		notYet = nodes - len(list.Items)
		for _, n := range list.Items {
			if len(n.Spec.Taints) > 0 || !nodeReady(n) {
				notYet++
			}
		}
		return notYet == 0, nil
	})
	if err != nil {
		t.Fatalf("%d of %d nodes not Ready and untainted: %v", notYet, nodes, err)
	}
	t.Logf("%d nodes Ready and untainted %.1f s after they were made", nodes, time.Since(start).Seconds())
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (cl *cluster) kwokctl(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(bin("kwokctl"), args...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+cl.workdir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("kwokctl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

// apply server-side applies manifests (files, directories or kustomize
// directories with -k) as the admin.
func (cl *cluster) apply(t *testing.T, args ...string) {
	t.Helper()
	all := append([]string{"--kubeconfig", cl.kubeconfig, "apply", "--server-side", "--force-conflicts",
		"--field-manager=bench-compare"}, args...)
	if out, err := exec.Command(bin("kubectl"), all...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(all, " "), err, out)
	}
}

// waitEstablished waits until every CRD in the cluster is served. A CRD
// created a moment before has no conditions yet, and kubectl wait then
// fails at once ("<nil> is of the type <nil>"); it is asked again.
func (cl *cluster) waitEstablished(t *testing.T) {
	t.Helper()
	args := []string{"--kubeconfig", cl.kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"}
	for attempt := 1; ; attempt++ {
		out, err := exec.Command(bin("kubectl"), args...).CombinedOutput()
		if err == nil {
			return
		}
		if attempt == 5 || !strings.Contains(string(out), "is of the type <nil>") {
			t.Fatalf("CRDs not established: %v\n%s", err, out)
		}
		time.Sleep(time.Second)
	}
}

// controlPlane names the processes of a kwokctl binary cluster, as its pid
// files (clusters/<name>/pids/<component>.pid) name them.
var controlPlane = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok-controller"}

// cpuSeconds is the CPU time each control-plane process has used so far
// (0 for one whose pid file cannot be read).
func (cl *cluster) cpuSeconds() map[string]float64 {
	out := map[string]float64{}
	for _, name := range controlPlane {
		raw, err := os.ReadFile(filepath.Join(cl.workdir, "clusters", cl.name, "pids", name+".pid"))
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(string(raw), &pid); err == nil {
			out[name] = testenv.ProcessCPUSeconds(pid)
		}
	}
	return out
}

// profileAPIServer starts a CPU profile of the API server over the next
// seconds (kube-apiserver serves /debug/pprof to the admin), saved to path;
// the function it returns waits for it and reports a failure on t.
func (cl *cluster) profileAPIServer(t *testing.T, seconds int, path string) (wait func()) {
	hc, err := rest.HTTPClientFor(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return saveProfile(t, hc, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cl.cfg.Host, "/"), seconds), path)
}

// componentPatches is a KwokctlConfiguration with the control plane's
// flags the harness sets, or "" for none:
//
//   - With BENCH_COMPARE_COMPONENT_LIMITS=raised, kube-scheduler and
//     kube-controller-manager get client limits of 5,000 QPS and a burst
//     of 10,000 (the figures kwokctl's --disable-qps-limits gives them; the
//     API server keeps its flow control) instead of their defaults (50/100
//     and 20/30 in Kubernetes v1.36's defaults.go). On two cores that made
//     the ray pairing slower and shortened nothing (docs/benchmarks.md),
//     so the defaults stay.
//   - With BENCH_COMPARE_SCHEDULER_PROFILE set, kube-scheduler serves
//     /debug/pprof without authorization (it has no authentication
//     kubeconfig here; a repeated list flag appends).
func componentPatches() string {
	var scheduler, controllerManager []string
	if componentLimitsRaised() {
		limits := []string{"kube-api-qps", "5000", "kube-api-burst", "10000"}
		scheduler = append(scheduler, limits...)
		controllerManager = append(controllerManager, limits...)
	}
	if schedulerProfileSeconds() > 0 {
		scheduler = append(scheduler, "authorization-always-allow-paths", "/debug/pprof/*")
	}
	var b strings.Builder
	for _, c := range []struct {
		name string
		args []string
	}{{"kube-scheduler", scheduler}, {"kube-controller-manager", controllerManager}} {
		if len(c.args) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- name: %s\n  extraArgs:\n", c.name)
		for i := 0; i < len(c.args); i += 2 {
			fmt.Fprintf(&b, "  - key: %s\n    value: %q\n", c.args[i], c.args[i+1])
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "kind: KwokctlConfiguration\napiVersion: config.kwok.x-k8s.io/v1alpha1\ncomponentsPatches:\n" + b.String()
}

// componentLimitsRaised is BENCH_COMPARE_COMPONENT_LIMITS=raised.
func componentLimitsRaised() bool { return os.Getenv("BENCH_COMPARE_COMPONENT_LIMITS") == "raised" }

// schedulerProfileSeconds is BENCH_COMPARE_SCHEDULER_PROFILE: keep a CPU
// profile of kube-scheduler over the first seconds of each run.
func schedulerProfileSeconds() int { return bench.EnvPositive("BENCH_COMPARE_SCHEDULER_PROFILE", 0) }

// profileScheduler starts a CPU profile of kube-scheduler over the next
// seconds, saved to path, on the secure port its command line names (the
// cluster was started with componentPatches).
func (cl *cluster) profileScheduler(t *testing.T, seconds int, path string) (wait func()) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(cl.workdir, "clusters", cl.name, "pids", "kube-scheduler.pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(raw), &pid); err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	port := ""
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if v, ok := strings.CutPrefix(arg, "--secure-port="); ok {
			port = v
		}
	}
	if port == "" {
		t.Fatalf("kube-scheduler's command line names no --secure-port: %q", cmdline)
	}
	// Its serving certificate is self-signed; the call stays on loopback.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	return saveProfile(t, hc, fmt.Sprintf("https://127.0.0.1:%s/debug/pprof/profile?seconds=%d", port, seconds), path)
}

// accountControlPlane reads the control plane's CPU times and the API
// server's metrics now; the function it returns reads them again, logs
// what the API server did in between (logAPIServerWork) and returns each
// control-plane process's CPU seconds in between.
func (cl *cluster) accountControlPlane(t *testing.T) (end func() map[string]float64) {
	cpuBefore := cl.cpuSeconds()
	apiBefore, apiErr := cl.apiServerMetrics()
	return func() map[string]float64 {
		cpu := map[string]float64{}
		for name, after := range cl.cpuSeconds() {
			cpu[name] = after - cpuBefore[name]
		}
		var apiAfter apiServerWork
		if apiErr == nil {
			apiAfter, apiErr = cl.apiServerMetrics()
		}
		if apiErr != nil {
			t.Logf("API server metrics: %v", apiErr)
		} else {
			logAPIServerWork(t, apiBefore, apiAfter)
		}
		return cpu
	}
}
