package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// BenchmarkRestart converges N RayClusters (1 head + 3 workers), N
// TrainJobs and one NodeSet of N pods (their Slurm nodes registered IDLE in
// a fake Slurm) under one manager, stops it, and starts a new one on the
// same objects, as a rollout or a crash does. It reports, for the new manager:
// its writes until it is quiet (the target is zero: nothing changed), the
// time to its first reconcile, and the time until it has reconciled every
// object once.
func BenchmarkRestart(b *testing.B) {
	n := N(100)
	for i := 0; i < b.N; i++ {
		runRestart(b, n)
	}
}

// restartManager is one in-process manager set up as the Gantry manager
// sets up the raycluster and trainjob integrations and the NodeSet
// reconciler (talking to slurmFake), counting its writes.
func restartManager(b *testing.B, env *testenv.Env, counter *testenv.WriteCounter, slurmFake *fake.Client) (stop func()) {
	b.Helper()
	counted := *env
	counted.Config = counter.Wrap(env.Config)
	mgr, err := managertest.New(&counted)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	for _, in := range []workload.Integration{raycluster.Integration(), trainjob.Integration(), nodeSetIntegration(slurmFake)} {
		// A registry per manager: both managers of the run live in this process.
		if err := in.SetupWithManager(ctx, mgr, workload.Options{Registerer: prometheus.NewRegistry()}); err != nil {
			b.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("manager: %v", err)
		}
	}
}

// reconcileCount is how many reconciles the named controllers finished in
// this process, across managers.
func reconcileCount(b *testing.B, controllers ...string) float64 {
	b.Helper()
	n, err := testenv.Reconciles(controllers...)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func runRestart(b *testing.B, n int) {
	b.StopTimer()
	ctrl.SetLogger(logr.Discard())
	scheme := slices.Concat(raycluster.Integration().AddToScheme, trainjob.Integration().AddToScheme,
		[]func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme})
	env, err := testenv.StartE(testenv.Options{AddToScheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	c := env.Client
	setupTorchRuntimeAndNamespace(ctx, b, c)
	slurmFake := fake.New()

	first := &testenv.WriteCounter{}
	stop := restartManager(b, env, first, slurmFake)
	if err := c.Create(ctx, slinkytesting.MakeController("slurm", "bench").Keys("keys").Obj()); err != nil {
		b.Fatal(err)
	}
	nodeSet := slinkytesting.MakeNodeSet("cpu", "bench", "slurm").Obj()
	nodeSet.Spec.Replicas = ptr.To(int32(n))
	if err := c.Create(ctx, nodeSet); err != nil {
		b.Fatal(err)
	}
	createRayClustersAndTrainJobs(ctx, b, c, n)
	err = Poll(200*time.Millisecond, 20*time.Minute, func() (bool, error) {
		if made, err := rayPodsAndJobSetsMade(ctx, c, n); !made || err != nil {
			return false, err
		}
		var nodeSetPods corev1.PodList
		if err := c.List(ctx, &nodeSetPods, client.InNamespace("bench"), client.HasLabels{slinkyv1beta1.LabelNodeSetPodName}); err != nil {
			return false, err
		}
		return len(nodeSetPods.Items) >= n, nil
	})
	if err != nil {
		b.Fatalf("not converged: %v", err)
	}
	// The NodeSet's pods run and their Slurm nodes are IDLE, so the new
	// manager finds them as a running cluster has them.
	if err := bringUp(ctx, c, "bench", slurmFake, client.HasLabels{slinkyv1beta1.LabelNodeSetPodName}); err != nil {
		b.Fatal(err)
	}
	if err := waitForSlurmConditions(ctx, c, "bench", client.HasLabels{slinkyv1beta1.LabelNodeSetPodName}); err != nil {
		b.Fatalf("Slurm pod conditions not written: %v", err)
	}
	if !first.WaitQuiet(3*time.Second, 5*time.Minute) {
		b.Fatalf("the first manager kept writing: %v", first.ByVerb())
	}
	stop()

	progress := newReconcileProgress(n, func(name string) float64 { return reconcileCount(b, name) })
	second := &testenv.WriteCounter{}
	stopProfile := startCPUProfile(b)
	b.StartTimer()
	progress.start = time.Now()
	stop = restartManager(b, env, second, slurmFake)
	defer stop()
	err = Poll(20*time.Millisecond, 10*time.Minute, func() (bool, error) { return progress.done(), nil })
	b.StopTimer()
	stopProfile()
	if err != nil {
		b.Fatalf("the new manager did not reconcile every object: %v", err)
	}
	second.WaitQuiet(3*time.Second, time.Minute)
	b.ReportMetric(float64(second.Total()), "writes-after-restart")
	progress.report(b)
	if second.Total() > 0 {
		LogWrites(b, second, 2*n+1, "object")
	}
}

// reconcileProgress times a new manager's first pass over the objects of
// the restart and leader-change benchmarks: N RayClusters, N TrainJobs and
// one NodeSet. A controller is through when it has reconciled as many
// times as it has objects since start (a count: the metrics do not say
// which object a reconcile was for).
type reconcileProgress struct {
	count   func(controller string) float64
	objects map[string]int
	before  map[string]float64
	start   time.Time
	first   time.Duration
	each    map[string]time.Duration
	all     time.Duration
}

func newReconcileProgress(n int, count func(controller string) float64) *reconcileProgress {
	p := &reconcileProgress{count: count, objects: map[string]int{raycluster.Name: n, trainjob.Name: n, nodeset.Name: 1},
		before: map[string]float64{}, each: map[string]time.Duration{}}
	for name := range p.objects {
		p.before[name] = count(name)
	}
	return p
}

// done reads the counts and reports whether every controller is through.
func (p *reconcileProgress) done() bool {
	for name, objects := range p.objects {
		got := p.count(name) - p.before[name]
		if got > 0 && p.first == 0 {
			p.first = time.Since(p.start)
		}
		if _, through := p.each[name]; !through && got >= float64(objects) {
			p.each[name] = time.Since(p.start)
		}
	}
	if len(p.each) == len(p.objects) && p.all == 0 {
		p.all = time.Since(p.start)
	}
	return p.all > 0
}

func (p *reconcileProgress) report(b *testing.B) {
	b.ReportMetric(p.first.Seconds(), "s-to-first-reconcile")
	b.ReportMetric(p.all.Seconds(), "s-to-every-object")
	for name, d := range p.each {
		b.ReportMetric(d.Seconds(), "s-to-every-"+name)
	}
}

// createRayClustersAndTrainJobs creates N RayClusters (1 head + 3 workers)
// and N torch TrainJobs (numNodes 2) in namespace bench.
func createRayClustersAndTrainJobs(ctx context.Context, b *testing.B, c client.Client, n int) {
	b.Helper()
	createRayClusters(ctx, b, c, n)
	for i := 0; i < n; i++ {
		tj := trainertesting.MakeTrainJob(fmt.Sprintf("tj-%04d", i), "bench").
			RuntimeRef(trainer.ClusterTrainingRuntimeKind, "torch-distributed").NumNodes(2).Obj()
		if err := c.Create(ctx, tj); err != nil {
			b.Fatal(err)
		}
	}
}

// rayPodsAndJobSetsMade reports whether the manager made every Pod of the
// N RayClusters and every JobSet of the N TrainJobs.
func rayPodsAndJobSetsMade(ctx context.Context, c client.Client, n int) (bool, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("bench"), client.HasLabels{rayv1.RayClusterLabelKey}); err != nil {
		return false, err
	}
	var js jobsetv1alpha2.JobSetList
	if err := c.List(ctx, &js, client.InNamespace("bench")); err != nil {
		return false, err
	}
	return len(pods.Items) >= 4*n && len(js.Items) >= n, nil
}
