package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slurmworkload "github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	"github.com/gantry-dev/gantry/test/testenv"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// oneFakeSlurm serves the same in-memory slurmrestd for every Controller.
type oneFakeSlurm struct{ c *fake.Client }

func (o oneFakeSlurm) ClientFor(context.Context, types.NamespacedName) (slurm.Client, string, error) {
	return o.c, "fake", nil
}

// nodeSetIntegration is the Slurm workload's NodeSet reconciler alone, with
// its field indexes, talking to f for every Controller.
func nodeSetIntegration(f *fake.Client) workload.Integration {
	return workload.Integration{
		Name:         nodeset.Name,
		AddToScheme:  []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme},
		SetupIndexes: slurmworkload.Integration().SetupIndexes,
		Setup: func(_ context.Context, mgr ctrl.Manager, opts workload.Options) error {
			r, err := nodeset.New(mgr, nodeset.Options{Options: opts, Clients: oneFakeSlurm{f}})
			if err != nil {
				return err
			}
			return r.SetupWithManager(mgr)
		},
	}
}

// BenchmarkNodeSetScale scales one NodeSet 0 → N → 0 against a real API
// server and a fake Slurm in which drains take effect at once. Between the
// two, every pod is marked Running and Ready and its Slurm node registered
// (there is no kubelet or slurmd), so the scale-in takes the full
// drain-then-delete path. Reports the time of each phase, the manager's API
// writes per pod and its memory.
func BenchmarkNodeSetScale(b *testing.B) {
	n := N(200)
	for i := 0; i < b.N; i++ {
		runNodeSetScale(b, n)
	}
}

func runNodeSetScale(b *testing.B, n int) {
	b.StopTimer()
	env, err := testenv.StartE(testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	slurmFake := fake.New()
	reg := &workload.Registry{}
	reg.MustRegister(nodeSetIntegration(slurmFake))
	counter := &testenv.WriteCounter{}
	done, err := StartManager(ctx, env.Config, reg, counter)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); <-done }()

	// The test's own client must not be the bottleneck.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	const ns = "bench"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, slinkytesting.MakeController("slurm", ns).Keys("keys").Obj()); err != nil {
		b.Fatal(err)
	}
	nodeSet := slinkytesting.MakeNodeSet("cpu", ns, "slurm").Obj()
	nodeSet.Spec.Replicas = ptr.To[int32](0)
	if err := c.Create(ctx, nodeSet); err != nil {
		b.Fatal(err)
	}
	heapBefore := HeapInuseMiB()

	b.StartTimer()
	start := time.Now()
	scale(ctx, b, c, ns, int32(n))
	if err := waitForPods(ctx, c, ns, n); err != nil {
		b.Fatalf("%d Pods not created: %v", n, err)
	}
	scaleOut := time.Since(start)
	b.StopTimer()
	writesOut := settle(counter)
	heapPeak := HeapInuseMiB() - heapBefore

	if err := bringUp(ctx, c, ns, slurmFake); err != nil {
		b.Fatal(err)
	}
	if err := waitForSlurmConditions(ctx, c, ns); err != nil {
		b.Fatalf("Slurm pod conditions not written: %v", err)
	}
	settle(counter)
	before := counter.Total()

	b.StartTimer()
	start = time.Now()
	scale(ctx, b, c, ns, 0)
	if err := waitForPods(ctx, c, ns, 0); err != nil {
		b.Fatalf("Pods not deleted: %v", err)
	}
	scaleIn := time.Since(start)
	b.StopTimer()
	writesIn := settle(counter) - before

	b.ReportMetric(scaleOut.Seconds(), "s-scale-out")
	b.ReportMetric(scaleIn.Seconds(), "s-scale-in")
	b.ReportMetric(float64(writesOut)/float64(n), "writes/pod-out")
	b.ReportMetric(float64(writesIn)/float64(n), "writes/pod-in")
	b.ReportMetric(heapPeak, "heap-MiB")
	b.ReportMetric(PeakRSSMiB(), "peak-rss-MiB")
	b.Logf("N=%d scale-out %.1fs (%d writes), scale-in %.1fs (%d writes), Slurm ListNodes %d GetNode %d UpdateNode %d",
		n, scaleOut.Seconds(), writesOut, scaleIn.Seconds(), writesIn,
		slurmFake.Calls(fake.OpListNodes), slurmFake.Calls(fake.OpGetNode), slurmFake.Calls(fake.OpUpdateNode))
	// Warnings point at wasted writes (failed or duplicate creates).
	var evs eventsv1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(ns)); err == nil {
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning {
				b.Logf("warning event %s: %s", e.Reason, e.Note)
			}
		}
	}
	LogWrites(b, counter, n, "pod")
}

func scale(ctx context.Context, b *testing.B, c client.Client, ns string, replicas int32) {
	n := &slinkyv1beta1.NodeSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cpu"}, n); err != nil {
		b.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Replicas = ptr.To(replicas)
	if err := c.Patch(ctx, n, patch); err != nil {
		b.Fatal(err)
	}
}

func waitForPods(ctx context.Context, c client.Client, ns string, want int) error {
	return Poll(200*time.Millisecond, 20*time.Minute, func() (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(pods.Items) == want, nil
	})
}

// settle waits until the manager has sent no write for 3s and returns its
// total. (Poll runs its condition at once, so the former "total unchanged
// since the previous poll" check passed on the first call and never waited.)
func settle(counter *testenv.WriteCounter) int64 {
	counter.WaitQuiet(3*time.Second, 2*time.Minute)
	return counter.Total()
}

// waitForSlurmConditions waits until every pod (of those opts select) shows the Slurm node bringUp
// registered (SlurmNodeStateIdle), so the manager's condition writes are
// charged to the bring-up, not to the scale-in.
func waitForSlurmConditions(ctx context.Context, c client.Client, ns string, opts ...client.ListOption) error {
	return Poll(200*time.Millisecond, 2*time.Minute, func() (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, append(opts, client.InNamespace(ns))...); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == nodeset.PodConditionPrefix+"Idle" && c.Status == corev1.ConditionTrue
			}) {
				return false, nil
			}
		}
		return true, nil
	})
}

// bringUp plays kubelet and slurmd: every pod (of those opts select) becomes Running and Ready
// and its Slurm node is registered IDLE.
func bringUp(ctx context.Context, c client.Client, ns string, f *fake.Client, opts ...client.ListOption) error {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, append(opts, client.InNamespace(ns))...); err != nil {
		return err
	}
	work := make(chan *corev1.Pod)
	errs := make(chan error, len(pods.Items))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for p := range work {
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
						return err
					}
					p.Status.Phase = corev1.PodRunning
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
					return c.Status().Update(ctx, p)
				})
				if err != nil {
					errs <- fmt.Errorf("marking %s running: %w", p.Name, err)
				}
				f.SetNode(slurm.Node{Name: nodeset.SlurmNodeName(p), State: []slurm.NodeState{slurm.NodeStateIdle}})
			}
		})
	}
	for i := range pods.Items {
		work <- &pods.Items[i]
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}
