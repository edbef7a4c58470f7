package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	slurmworkload "github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	"github.com/gantry-dev/gantry/test/testenv"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// BenchmarkLeaderChange runs two manager processes (bin/manager, leader
// election on, acting as the chart's ServiceAccount with the chart's RBAC)
// in front of N converged RayClusters (1 head + 3 workers), N TrainJobs and
// one NodeSet of N pods (running, their Slurm nodes IDLE in a fake
// slurmrestd the managers reach over HTTP), kills the leader with SIGKILL,
// as a lost node does, and reports for the standby that takes over: its
// writes until it is quiet (Lease renewals left out) and those to the
// workloads' namespace (the target is zero: nothing changed), the time
// from the kill to its first reconcile (the lease must expire first:
// --leader-elect-lease-duration, 12 s by default) and to its having
// reconciled every object once. Each process sends its requests through its
// own counting proxy.
func BenchmarkLeaderChange(b *testing.B) {
	n := N(100)
	for i := 0; i < b.N; i++ {
		runLeaderChange(b, n)
	}
}

// electedManager is one bin/manager process with leader election on,
// counted apart from the other.
type electedManager struct {
	proc    *testenv.ManagerProcess
	writes  *testenv.WriteCounter
	metrics string // host:port of its metrics endpoint
}

func startElectedManager(b *testing.B, cfg *rest.Config, name string) *electedManager {
	b.Helper()
	m := &electedManager{writes: &testenv.WriteCounter{IgnoreLeases: true}}
	proxy, err := m.writes.Proxy(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(proxy.Close)
	m.metrics = testenv.FreeAddr(b)
	m.proc, err = testenv.StartManagerProcess(proxy.Kubeconfig, b.TempDir(), name,
		"--controllers", raycluster.Name+","+trainjob.Name+","+slurmworkload.Name,
		"--feature-gates", string(slurmworkload.SlurmrestdURLOverride)+"=true",
		"--leader-elect", "--leader-election-namespace", testenv.ChartNamespace,
		"--metrics-bind-address", m.metrics)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if !m.proc.Exited() {
			m.proc.Stop()
		}
	})
	return m
}

// reconciles is how many reconciles the named controllers (all three when
// none is named) finished in m.
func (m *electedManager) reconciles(b *testing.B, controllers ...string) float64 {
	b.Helper()
	if len(controllers) == 0 {
		controllers = []string{raycluster.Name, trainjob.Name, nodeset.Name}
	}
	n, err := testenv.ProcessReconciles(m.metrics, controllers...)
	if err != nil {
		b.Fatalf("reading the reconcile count of %s: %v (log %s)", m.metrics, err, m.proc.Log)
	}
	return n
}

func runLeaderChange(b *testing.B, n int) {
	b.StopTimer()
	scheme := slices.Concat(raycluster.Integration().AddToScheme, trainjob.Integration().AddToScheme,
		[]func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme})
	env, err := testenv.StartE(testenv.Options{AddToScheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	// A cleanup, not a defer: the manager processes' cleanups, registered
	// later, then run first, so they never talk to a stopped API server.
	b.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	c := env.Client
	setupTorchRuntimeAndNamespace(ctx, b, c)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = testenv.ChartIdentity(b, env)
	slurmFake := fake.New()
	const jwtKey = "leader-change-jwt-key-of-32-bytes"
	url, stopSlurm := fake.NewServer(slurmFake, fake.WithJWTKey([]byte(jwtKey))).Start()
	b.Cleanup(stopSlurm)
	restAPI := slinkytesting.MakeRestApi("slurm", "bench", "slurm").Obj()
	restAPI.Annotations = map[string]string{slinkyv1beta1.AnnotationSlurmrestdURL: url}
	nodeSet := slinkytesting.MakeNodeSet("cpu", "bench", "slurm").Obj()
	nodeSet.Spec.Replicas = ptr.To(int32(n))
	for _, obj := range []client.Object{
		slinkytesting.MakeSecret("keys", "bench", map[string]string{"slurm.key": "leader-change-slurm-key", "jwt.key": jwtKey}).Obj(),
		slinkytesting.MakeController("slurm", "bench").Keys("keys").Obj(), restAPI, nodeSet,
	} {
		if err := c.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	nodeSetPods := client.HasLabels{slinkyv1beta1.LabelNodeSetPodName}

	// The first to start takes the lease; the standby starts once the
	// leader has converged everything.
	leader := startElectedManager(b, cfg, "leader")
	createRayClustersAndTrainJobs(ctx, b, c, n)
	err = Poll(200*time.Millisecond, 20*time.Minute, func() (bool, error) {
		if leader.proc.Exited() {
			return false, fmt.Errorf("the leader exited; log %s", leader.proc.Log)
		}
		if made, err := rayPodsAndJobSetsMade(ctx, c, n); !made || err != nil {
			return false, err
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace("bench"), nodeSetPods); err != nil {
			return false, err
		}
		return len(pods.Items) >= n, nil
	})
	if err != nil {
		b.Fatalf("not converged: %v", err)
	}
	// The NodeSet's pods run and their Slurm nodes are IDLE, as in a
	// running cluster.
	if err := bringUp(ctx, c, "bench", slurmFake, nodeSetPods); err != nil {
		b.Fatal(err)
	}
	if err := waitForSlurmConditions(ctx, c, "bench", nodeSetPods); err != nil {
		b.Fatalf("Slurm pod conditions not written: %v (leader log %s)", err, leader.proc.Log)
	}
	standby := startElectedManager(b, cfg, "standby")
	if !leader.writes.WaitQuiet(3*time.Second, 5*time.Minute) {
		b.Fatalf("the leader kept writing: %v", leader.writes.ByVerb())
	}
	// The standby is up once its metrics endpoint answers; it must not
	// have reconciled anything while it did not lead.
	if err := Poll(200*time.Millisecond, 2*time.Minute, func() (bool, error) {
		_, err := testenv.ProcessReconciles(standby.metrics, raycluster.Name)
		return err == nil, nil
	}); err != nil {
		b.Fatalf("the standby's metrics never answered (log %s)", standby.proc.Log)
	}
	if got := standby.reconciles(b); got != 0 {
		b.Fatalf("the standby reconciled %v objects while not leading", got)
	}

	progress := newReconcileProgress(n, func(name string) float64 { return standby.reconciles(b, name) })
	b.StartTimer()
	progress.start = time.Now()
	leader.proc.Kill()
	err = Poll(50*time.Millisecond, 10*time.Minute, func() (bool, error) {
		if standby.proc.Exited() {
			return false, fmt.Errorf("the standby exited; log %s", standby.proc.Log)
		}
		return progress.done(), nil
	})
	b.StopTimer()
	if err != nil {
		b.Fatalf("the new leader did not reconcile every object: %v", err)
	}
	standby.writes.WaitQuiet(3*time.Second, time.Minute)
	// All but the Lease renewals: the leader election's own "became
	// leader" Event on the Lease counts here. The objects' namespace holds
	// only the workloads' writes.
	b.ReportMetric(float64(standby.writes.Total()), "writes-after-takeover")
	b.ReportMetric(float64(standby.writes.InNamespace("bench")), "workload-writes-after-takeover")
	progress.report(b)
	if standby.writes.Total() > 0 {
		LogWrites(b, standby.writes, 2*n+1, "object")
		b.Logf("the writes, as namespace: request: %q", standby.writes.Log())
	}
}
