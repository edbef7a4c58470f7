package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/test/syncbuf"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// container runs one of Gantry's containers as the kubelet would: its
// command and args, its literal env, with `ray` on PATH being the stand-in.
type container struct {
	t        *testing.T
	name     string
	env      []string
	cmd      *exec.Cmd
	out      syncbuf.Buffer
	done     chan struct{}
	waitErr  error
	stateDir string
}

// podEnv is the environment of a container of a Pod built for the
// test: the process's, the stand-in's settings, then the container's
// literal variables with the head Service name replaced by loopback.
func podEnv(t *testing.T, c corev1.Container, bin, stateDir, fqdn string, servePort int) []string {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"RAY_STANDIN_AS_MAIN=1",
		envStateDir+"="+stateDir,
		envServePort+"="+strconv.Itoa(servePort),
		// The Pod's `ulimit -n` must not fail for a non-root test run.
		podspec.EnvRayStartUlimitOpenFiles+"="+strconv.FormatUint(lim.Cur, 10),
	)
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+strings.ReplaceAll(e.Value, fqdn, "127.0.0.1"))
		}
	}
	return env
}

func startContainer(t *testing.T, name string, c corev1.Container, env []string, fqdn string) *container {
	t.Helper()
	args := append(append([]string(nil), c.Command[1:]...), c.Args...)
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], fqdn, "127.0.0.1")
	}
	ct := &container{t: t, name: name, env: env, done: make(chan struct{})}
	ct.cmd = exec.Command(c.Command[0], args...)
	ct.cmd.Env = env
	ct.cmd.Stdout, ct.cmd.Stderr = &ct.out, &ct.out
	ct.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := ct.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { ct.waitErr = ct.cmd.Wait(); close(ct.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-ct.cmd.Process.Pid, syscall.SIGKILL)
		<-ct.done
		if t.Failed() {
			t.Logf("%s output:\n%s", name, ct.out.String())
		}
	})
	return ct
}

// wait waits for the container to end and returns its error.
func (c *container) wait(d time.Duration) error {
	select {
	case <-c.done:
		return c.waitErr
	case <-time.After(d):
		return errors.New(c.name + " still runs after " + d.String())
	}
}

// runProbe runs an exec probe as the kubelet would, with its timeout.
func runProbe(p *corev1.Probe, env []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(p.TimeoutSeconds)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Exec.Command[0], p.Exec.Command[1:]...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.New(strings.Join(p.Exec.Command, " ") + ": " + err.Error() + ": " + string(out))
	}
	return nil
}

// TestGantryPodsRunOnTheStandin runs what Gantry puts in a RayService's
// head and worker Pods: the worker's wait-gcs-ready init container (first
// while the head is down), the head and worker `ray start` commands through
// bash, their readiness and liveness probes, and `ray stop`.
func TestGantryPodsRunOnTheStandin(t *testing.T) {
	if _, err := exec.LookPath("wget"); err != nil {
		t.Skip("Gantry's probes run wget, which is not installed here")
	}
	bin := t.TempDir()
	if err := os.Symlink(testBinary(t), filepath.Join(bin, "ray")); err != nil {
		t.Fatal(err)
	}
	hp := newHeadPorts(t)
	workerAgent, workerMetrics, servePort := freePort(t), freePort(t), freePort(t)
	w := raytesting.MakeRayCluster("rc", "ns").
		Label(rayv1.RayOriginatedFromCRDLabelKey, "RayService").
		HeadStartParam("node-ip-address", "127.0.0.1").
		HeadStartParam("dashboard-host", "127.0.0.1").
		HeadStartParam("port", strconv.Itoa(hp.gcs)).
		HeadStartParam("dashboard-port", strconv.Itoa(hp.dashboard)).
		HeadStartParam("dashboard-agent-listen-port", strconv.Itoa(hp.agent)).
		HeadStartParam("metrics-export-port", strconv.Itoa(hp.metrics)).
		HeadStartParam("ray-client-server-port", strconv.Itoa(hp.client)).
		HeadLimits(raytesting.Resources("cpu", "1", "memory", "2Gi")).
		WorkerGroup("cpu", 1).
		WorkerStartParam("cpu", "node-ip-address", "127.0.0.1").
		WorkerStartParam("cpu", "dashboard-agent-listen-port", strconv.Itoa(workerAgent)).
		WorkerStartParam("cpu", "metrics-export-port", strconv.Itoa(workerMetrics)).
		WorkerLimits("cpu", raytesting.Resources("cpu", "1", "memory", "1Gi"))
	wc := &w.Group("cpu").Template.Spec.Containers[0]
	wc.Ports = append(wc.Ports, corev1.ContainerPort{Name: podspec.ServingPortName, ContainerPort: int32(servePort)})
	cluster := w.Obj()
	opts := podspec.DefaultBuildOptions()
	fqdn := podspec.HeadServiceFQDN(cluster, opts.ClusterDomain)
	headPod := podspec.BuildHeadPod(cluster, opts)
	workerPod := podspec.BuildWorkerPod(cluster, &cluster.Spec.WorkerGroupSpecs[0], podspec.WorkerReplica{}, opts)
	headC, workerC := headPod.Spec.Containers[0], workerPod.Spec.Containers[0]
	headDir, workerDir := t.TempDir(), t.TempDir()
	headEnv := podEnv(t, headC, bin, headDir, fqdn, 0)
	workerEnv := podEnv(t, workerC, bin, workerDir, fqdn, servePort)

	// 1. The init container waits while there is no head.
	initC := workerPod.Spec.InitContainers[0]
	wait := startContainer(t, initC.Name, initC, podEnv(t, initC, bin, workerDir, fqdn, 0), fqdn)
	eventually(t, 10*time.Second, "wait-gcs-ready failing while the head is down", func() error {
		if !strings.Contains(wait.out.String(), "Waiting for GCS to be ready.") {
			return errors.New("no waiting line yet")
		}
		return nil
	})

	// 2. The head starts and passes its probes.
	head := startContainer(t, "head", headC, headEnv, fqdn)
	eventually(t, 20*time.Second, "head readiness probe", func() error { return runProbe(headC.ReadinessProbe, headEnv) })
	if err := runProbe(headC.LivenessProbe, headEnv); err != nil {
		t.Errorf("head liveness probe: %v", err)
	}

	// 3. The init container sees the GCS (it retries every 5s).
	if err := wait.wait(15 * time.Second); err != nil || !strings.Contains(wait.out.String(), "GCS is ready.") {
		t.Fatalf("wait-gcs-ready: %v\n%s", err, wait.out.String())
	}

	// 4. The worker joins and passes its probes, the Serve proxy's too.
	if !strings.Contains(strings.Join(workerC.ReadinessProbe.Exec.Command, " "), strconv.Itoa(servePort)+"/-/healthz") {
		t.Fatalf("worker readiness probe %q does not check the Serve proxy", workerC.ReadinessProbe.Exec.Command)
	}
	worker := startContainer(t, "worker", workerC, workerEnv, fqdn)
	eventually(t, 20*time.Second, "worker readiness probe", func() error { return runProbe(workerC.ReadinessProbe, workerEnv) })
	if err := runProbe(workerC.LivenessProbe, workerEnv); err != nil {
		t.Errorf("worker liveness probe: %v", err)
	}

	// 5. From Ray 2.53.0 the probes GET the agent's /api/healthz instead.
	cluster.Spec.RayVersion = "2.53.0"
	newHead := podspec.BuildHeadPod(cluster, opts).Spec.Containers[0]
	if g := newHead.ReadinessProbe.HTTPGet; g == nil {
		t.Errorf("Ray 2.53.0 head readiness probe %+v, want HTTP", newHead.ReadinessProbe)
	} else if _, err := httpGetBody("http://127.0.0.1:" + g.Port.String() + g.Path); err != nil {
		t.Errorf("HTTP probe of the running head: %v", err)
	}

	// 6. `ray stop` in each container ends `ray start --block` cleanly.
	for _, c := range []struct {
		ct  *container
		env []string
	}{{worker, workerEnv}, {head, headEnv}} {
		stop := exec.Command("/bin/bash", "-c", "ray stop")
		stop.Env = c.env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("ray stop in %s: %v\n%s", c.ct.name, err, out)
		}
		if err := c.ct.wait(15 * time.Second); err != nil {
			t.Errorf("%s after ray stop: %v, want exit 0", c.ct.name, err)
		}
		requirePrefixed(t, c.ct.name, c.ct.out.String())
	}
	if !strings.Contains(head.out.String(), "Ray stand-in head node started") ||
		!strings.Contains(worker.out.String(), "Ray stand-in worker node started, joined GCS 127.0.0.1:"+strconv.Itoa(hp.gcs)) {
		t.Errorf("start banners missing:\nhead:\n%s\nworker:\n%s", head.out.String(), worker.out.String())
	}
}
