package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/test/syncbuf"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// rayWords runs a container script as the Pod would (bash -c) with `ray`
// and `ulimit` replaced by shell functions, and returns the words bash
// passed to ray: exactly what the stand-in's argv will be.
func rayWords(t *testing.T, script string) []string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "words")
	prelude := "ray() { printf '%s\\0' \"$@\" > " + shellQuote(out) + "; }\nulimit() { :; }\n"
	if b, err := exec.Command("/bin/bash", "-c", "--", prelude+script).CombinedOutput(); err != nil {
		t.Fatalf("bash -c %q: %v\n%s", script, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the script did not run ray: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func rayContainerScript(t *testing.T, pod corev1.Pod) string {
	t.Helper()
	c := pod.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"/bin/bash", "-c", "--"}) || len(c.Args) != 1 {
		t.Fatalf("Ray container command %q args %q, want /bin/bash -c -- and one script", c.Command, c.Args)
	}
	return c.Args[0]
}

func TestDefaultPortsMatchGantry(t *testing.T) {
	for _, c := range []struct {
		name        string
		ours, their int
	}{
		{"gcs", defaultGCSPort, podspec.DefaultGcsServerPort},
		{"dashboard", defaultDashboardPort, podspec.DefaultDashboardPort},
		{"client", defaultClientPort, podspec.DefaultClientPort},
		{"serve", defaultServePort, podspec.DefaultServingPort},
		{"metrics", defaultMetricsPort, podspec.DefaultMetricsPort},
		{"dashboard agent", defaultDashboardAgentPort, podspec.DefaultDashboardAgentListenPort},
	} {
		if c.ours != c.their {
			t.Errorf("%s port: stand-in default %d, Gantry %d", c.name, c.ours, c.their)
		}
	}
}

// TestParseGantryHeadCommand reads the head Pod Gantry builds with its
// defaults, through bash as the kubelet would run it.
func TestParseGantryHeadCommand(t *testing.T) {
	w := raytesting.MakeRayCluster("rc", "ns").
		HeadLimits(raytesting.Resources("cpu", "2", "memory", "4Gi", "google.com/tpu", "4")).
		HeadStartParam("include-dashboard", "true").
		HeadStartParam("no-monitor", "true").
		HeadStartParam("object-store-memory", "100000000")
	w.Spec.HeadGroupSpec.Labels = map[string]string{"zone": "a", "tier": "gpu"}
	pod := podspec.BuildHeadPod(w.Obj(), podspec.DefaultBuildOptions())
	script := rayContainerScript(t, pod)

	words := rayWords(t, script)
	if len(words) < 2 || words[0] != "start" {
		t.Fatalf("ray was run with %q, want start ...", words)
	}
	o, err := parseStartArgs(words[1:])
	if err != nil {
		t.Fatalf("parsing %q: %v", words, err)
	}
	if !o.head || !o.block || !o.includeDashboard {
		t.Errorf("head %v block %v includeDashboard %v, want all true", o.head, o.block, o.includeDashboard)
	}
	if o.dashboardHost != "0.0.0.0" {
		t.Errorf("dashboard host %q, want 0.0.0.0 (the Pod's dashboard must be reachable)", o.dashboardHost)
	}
	got := []int{o.gcsPort, o.dashboardPort, o.agentPort, o.metricsPort, o.clientPort}
	want := []int{6379, 8265, 52365, 8080, 10001}
	if !slices.Equal(got, want) {
		t.Errorf("gcs, dashboard, agent, metrics, client ports = %v, want %v", got, want)
	}
	if o.resources["TPU"] != 4 || len(o.resources) != 1 {
		t.Errorf("resources = %v, want TPU:4 from the google.com/tpu limit", o.resources)
	}
	if o.labels["zone"] != "a" || o.labels["tier"] != "gpu" {
		t.Errorf("labels = %v", o.labels)
	}
	for _, f := range []string{"--no-monitor", "--object-store-memory=100000000"} {
		if !slices.Contains(o.unknown, f) {
			t.Errorf("unknown flags %q lack %s", o.unknown, f)
		}
	}
	for _, f := range []string{"--num-cpus=2", "--memory=4294967296"} {
		if !slices.Contains(words, f) {
			t.Errorf("command %q lacks %s", words, f)
		}
	}

	// The probes must ask the ports the stand-in will serve.
	for _, p := range []*corev1.Probe{pod.Spec.Containers[0].ReadinessProbe, pod.Spec.Containers[0].LivenessProbe} {
		if p == nil || p.Exec == nil {
			t.Fatalf("head probe %+v, want an exec probe", p)
		}
		cmd := strings.Join(p.Exec.Command, " ")
		for _, path := range []string{
			"localhost:" + strconv.Itoa(o.agentPort) + "/api/local_raylet_healthz",
			"localhost:" + strconv.Itoa(o.dashboardPort) + "/api/gcs_healthz",
		} {
			if !strings.Contains(cmd, path) {
				t.Errorf("probe %q does not ask %s", cmd, path)
			}
		}
	}
}

func TestParseGantryWorkerCommand(t *testing.T) {
	w := raytesting.MakeRayCluster("rc", "ns").WorkerGroup("gpu", 1).
		WorkerLimits("gpu", raytesting.Resources("cpu", "1", "memory", "1Gi", "nvidia.com/gpu", "1"))
	cluster := w.Obj()
	pod := podspec.BuildWorkerPod(cluster, &cluster.Spec.WorkerGroupSpecs[0], podspec.WorkerReplica{}, podspec.DefaultBuildOptions())
	words := rayWords(t, rayContainerScript(t, pod))
	if len(words) < 2 || words[0] != "start" {
		t.Fatalf("ray was run with %q", words)
	}
	o, err := parseStartArgs(words[1:])
	if err != nil {
		t.Fatalf("parsing %q: %v", words, err)
	}
	const head = "rc-head-svc.ns.svc.cluster.local:6379"
	if o.head || !o.block || o.address != head {
		t.Errorf("head %v block %v address %q, want a blocking worker of %s", o.head, o.block, o.address, head)
	}
	if o.agentPort != 52365 || o.metricsPort != 8080 {
		t.Errorf("agent port %d metrics port %d", o.agentPort, o.metricsPort)
	}
	if !slices.Contains(words, "--num-gpus=1") {
		t.Errorf("command %q lacks --num-gpus=1", words)
	}

	// The wait-gcs-ready init container calls `ray health-check`.
	if len(pod.Spec.InitContainers) != 1 {
		t.Fatalf("init containers: %+v", pod.Spec.InitContainers)
	}
	initWords := rayWords(t, pod.Spec.InitContainers[0].Args[0])
	p, err := parseFlags(initWords[1:], flagSpec{values: set("address")})
	if err != nil || initWords[0] != "health-check" || p.values["address"] != head {
		t.Errorf("init container runs ray %q (%v), want health-check --address %s", initWords, err, head)
	}
}

func TestParseStartArgs(t *testing.T) {
	o, err := parseStartArgs([]string{"--address", "h:1", "--block", "--unknown-switch", "--unknown-valued", "v", "--x=y", "--num-cpus", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if o.address != "h:1" || !o.block || o.head {
		t.Errorf("got %+v", o)
	}
	if want := []string{"--unknown-switch", "--unknown-valued v", "--x=y"}; !slices.Equal(o.unknown, want) {
		t.Errorf("unknown = %q, want %q", o.unknown, want)
	}
	if o.dashboardHost != "127.0.0.1" || o.gcsPort != 6379 {
		t.Errorf("defaults: dashboard host %q gcs port %d", o.dashboardHost, o.gcsPort)
	}
}

func TestParseStartArgsRejectsWhatRayRejects(t *testing.T) {
	for _, args := range [][]string{
		{"--head", "--port=abc"},
		{"--head", "--dashboard-port=70000"},
		{"--head", "--num-cpus=0.5"},
		{"--head", "--memory=4Gi"},
		// The shell quotes survived: Gantry's quoting went wrong.
		{"--head", `--resources='{"TPU":4}'`},
		{"--head", "--labels=novalue"},
		{"--head", "--include-dashboard=maybe"},
		{"--head", "--block=perhaps"},
		{"--head", "--port"},
		{"--block"}, // a worker without --address
		{"--head", "stray"},
	} {
		if o, err := parseStartArgs(args); err == nil {
			t.Errorf("parseStartArgs(%q) = %+v, want an error", args, o)
		}
	}
	code, _, errOut := runCLI("start", "--head", "--port=abc")
	if code != 2 || !strings.Contains(errOut, `--port="abc"`) {
		t.Errorf("ray start --port=abc = %d %q, want 2 naming the flag", code, errOut)
	}
}

// TestStartInBackgroundAndStop: `ray start` without --block returns once
// the node serves; `ray stop` ends it.
func TestStartInBackgroundAndStop(t *testing.T) {
	dir := t.TempDir()
	env := standinEnv(t, dir)
	ports := newHeadPorts(t)
	start := rayCommand(t, env, append([]string{"start"}, ports.args()...)...)
	out, err := start.CombinedOutput()
	if err != nil {
		t.Fatalf("ray start: %v\n%s", err, out)
	}
	requirePrefixed(t, "ray start", string(out))
	t.Cleanup(func() { _ = rayCommand(t, env, "stop", "--force").Run() })
	// Ready means serving: no retry here.
	if err := checkGCS(ports.gcsAddr(), time.Second); err != nil {
		t.Fatalf("after ray start returned: %v", err)
	}
	pidBytes, err := os.ReadFile(filepath.Join(dir, "ray.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidBytes)))

	stop := rayCommand(t, env, "stop")
	if out, err := stop.CombinedOutput(); err != nil || !strings.Contains(string(out), "stopped `ray start` (pid "+strconv.Itoa(pid)+")") {
		t.Fatalf("ray stop: %v\n%s", err, out)
	}
	if processAlive(pid) {
		t.Errorf("pid %d still runs after ray stop", pid)
	}
	if err := checkGCS(ports.gcsAddr(), time.Second); err == nil {
		t.Error("the GCS still answers after ray stop")
	}
	if out, err := rayCommand(t, env, "stop").CombinedOutput(); err != nil || !strings.Contains(string(out), "no running") {
		t.Errorf("second ray stop: %v %q, want exit 0 and 'no running'", err, out)
	}
	log, err := os.ReadFile(filepath.Join(dir, "ray-start.log"))
	if err != nil {
		t.Fatal(err)
	}
	requirePrefixed(t, "background log", string(log))
	if !strings.Contains(string(log), "signal received; stopping") {
		t.Errorf("background log lacks the clean shutdown:\n%s", log)
	}
}

func TestStartInBackgroundReportsFailure(t *testing.T) {
	busy := freePort(t)
	ln, err := listenOn(busy)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ports := newHeadPorts(t)
	ports.gcs = busy
	dir := t.TempDir()
	out, err := rayCommand(t, standinEnv(t, dir), append([]string{"start"}, ports.args()...)...).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "exited before serving") {
		t.Fatalf("ray start on a busy port: %v\n%s\nwant exit 1 and a pointer to the log", err, out)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "ray-start.log"))
	if !strings.Contains(string(log), "cannot listen on 127.0.0.1:"+strconv.Itoa(busy)+" for the gcs") {
		t.Errorf("log does not say which port was busy:\n%s", log)
	}
}

func TestStartBlockExitsZeroOnSIGTERM(t *testing.T) {
	ports := newHeadPorts(t)
	var out syncbuf.Buffer
	cmd := rayCommand(t, standinEnv(t, t.TempDir()), append([]string{"start", "--block"}, ports.args()...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	eventually(t, 10*time.Second, "head serving", func() error { return checkGCS(ports.gcsAddr(), time.Second) })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ray start --block after SIGTERM: %v, want exit 0\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("ray start --block still runs 10s after SIGTERM\n%s", out.String())
	}
	requirePrefixed(t, "ray start --block", out.String())
}

func TestWorkerGivesUpWithoutGCS(t *testing.T) {
	gcs := freePort(t) // nothing listens
	env := standinEnv(t, t.TempDir(), envGCSWaitTimeout+"=1s")
	args := []string{"start", "--block", "--address=127.0.0.1:" + strconv.Itoa(gcs), "--node-ip-address=127.0.0.1",
		"--dashboard-agent-listen-port=" + strconv.Itoa(freePort(t)), "--metrics-export-port=" + strconv.Itoa(freePort(t))}
	began := time.Now()
	out, err := rayCommand(t, env, args...).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("worker without GCS: %v, want exit 1\n%s", err, out)
	}
	if took := time.Since(began); took > 8*time.Second {
		t.Errorf("worker took %s to give up with a 1s budget", took)
	}
	for _, want := range []string{"gave up waiting for the GCS", "127.0.0.1:" + strconv.Itoa(gcs), "not reachable"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("worker output lacks %q:\n%s", want, out)
		}
	}
	requirePrefixed(t, "worker", string(out))
}

// startTestWorker runs `ray start --block` as a worker of the head at ports
// with the given reconnect timeout (seconds), and waits until it serves.
func startTestWorker(t *testing.T, ports headPorts, reconnectTimeout string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	env := standinEnv(t, t.TempDir(), envGCSReconnectTimeout+"="+reconnectTimeout)
	agent := freePort(t)
	out := &syncbuf.Buffer{}
	cmd := rayCommand(t, env, "start", "--block", "--address="+ports.gcsAddr(), "--node-ip-address=127.0.0.1",
		"--dashboard-agent-listen-port="+strconv.Itoa(agent), "--metrics-export-port="+strconv.Itoa(freePort(t)))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	eventually(t, 10*time.Second, "worker agent serving", func() error {
		_, err := httpGetBody("http://127.0.0.1:" + strconv.Itoa(agent) + "/api/local_raylet_healthz")
		return err
	})
	return cmd, out
}

// expectWorkerExit waits up to 15 s for the worker to exit 1 with reason in
// its output.
func expectWorkerExit(t *testing.T, cmd *exec.Cmd, out *syncbuf.Buffer, reason string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out.String(), reason) {
			t.Errorf("worker: %v, want exit 1 and %q\n%s", err, reason, out.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("worker still runs 15s later, want exit 1 and %q\n%s", reason, out.String())
	}
}

// TestWorkerExitsWhenGCSIsLost: a worker ends, as a raylet does, when its
// head stays away longer than RAY_gcs_rpc_server_reconnect_timeout_s.
func TestWorkerExitsWhenGCSIsLost(t *testing.T) {
	head, ports := startTestHead(t)
	cmd, out := startTestWorker(t, ports, "1")
	head.Close()
	expectWorkerExit(t, cmd, out, "has been unreachable for 1s")
}

// TestWorkerExitsWhenTheHeadIsNew: a head replaced quickly, on the same
// address, is a new cluster to a worker that joined the old one; the worker
// exits at once instead of waiting out the reconnect timeout.
func TestWorkerExitsWhenTheHeadIsNew(t *testing.T) {
	head, ports := startTestHead(t)
	cmd, out := startTestWorker(t, ports, "60")
	head.Close()
	o, err := parseStartArgs(ports.args())
	if err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	eventually(t, 10*time.Second, "a new head on the same ports", func() error {
		n, err := startNode(context.Background(), o, newLogger(&log))
		if err == nil {
			t.Cleanup(n.Close)
		}
		return err
	})
	expectWorkerExit(t, cmd, out, "is a new cluster")
}

// TestProcessAliveIgnoresZombies: `ray stop` must not wait out its grace
// period for a `ray start` that has exited but is not yet reaped (the
// container's PID 1 or a test may reap it late).
func TestProcessAliveIgnoresZombies(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	eventually(t, 5*time.Second, "child exited", func() error {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || !strings.Contains(string(stat), ") Z") {
			return errors.New("not a zombie yet")
		}
		return nil
	})
	if processAlive(pid) {
		t.Errorf("processAlive(%d) = true for a zombie", pid)
	}
	if !processAlive(os.Getpid()) {
		t.Error("processAlive(self) = false")
	}
}
