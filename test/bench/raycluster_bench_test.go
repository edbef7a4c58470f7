package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// BenchmarkRayClusterCreate creates N RayClusters of 1 head + 3 workers and
// reports the time until every Pod exists, the manager's API writes per
// cluster and its memory. A fresh API server and manager per run keep runs
// independent.
func BenchmarkRayClusterCreate(b *testing.B) {
	n := N(100)
	for i := 0; i < b.N; i++ {
		runRayClusterCreate(b, n, false)
	}
}

// BenchmarkRayClusterCreateProcess is the same run with the manager binary
// as its own process, so its peak RSS is the manager's alone. Writes are
// not counted here (the in-process run counts them exactly).
func BenchmarkRayClusterCreateProcess(b *testing.B) {
	n := N(100)
	for i := 0; i < b.N; i++ {
		runRayClusterCreate(b, n, true)
	}
}

func runRayClusterCreate(b *testing.B, n int, process bool) {
	b.StopTimer()
	env, err := testenv.StartE(testenv.Options{AddToScheme: raycluster.Integration().AddToScheme})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counter := &testenv.WriteCounter{}
	var proc *testenv.ManagerProcess
	if process {
		proc, err = testenv.StartManagerProcess(env.KubeConfig(), b.TempDir(), "bench", "--controllers", raycluster.Name)
		if err != nil {
			b.Fatal(err)
		}
		defer proc.Stop()
	} else {
		reg := &workload.Registry{}
		reg.MustRegister(raycluster.Integration())
		done, err := StartManager(ctx, env.Config, reg, counter)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { cancel(); <-done }()
	}

	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		b.Fatal(err)
	}
	heapBefore := HeapInuseMiB()
	b.StartTimer()
	start := time.Now()
	createRayClusters(ctx, b, c, n)
	want := n * 4
	err = Poll(200*time.Millisecond, 20*time.Minute, func() (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace("bench"), client.HasLabels{rayv1.RayClusterLabelKey}); err != nil {
			return false, err
		}
		return len(pods.Items) >= want, nil
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%d Pods not created: %v", want, err)
	}
	// Converged once every cluster's status reports its Pods; then let
	// trailing writes land before counting.
	err = Poll(200*time.Millisecond, 20*time.Minute, func() (bool, error) {
		var list rayv1.RayClusterList
		if err := c.List(ctx, &list, client.InNamespace("bench")); err != nil {
			return false, err
		}
		for _, rc := range list.Items {
			if rc.Status.DesiredWorkerReplicas != 3 || rc.Status.Head.PodName == "" {
				return false, nil
			}
		}
		return true, nil
	})
	converged := time.Since(start)
	if err != nil {
		b.Fatalf("status did not converge: %v", err)
	}
	b.ReportMetric(converged.Seconds(), "s-to-status")
	b.ReportMetric(elapsed.Seconds(), "s-to-all-pods")
	if process {
		b.ReportMetric(proc.PeakRSSMiB(), "manager-peak-rss-MiB")
		return
	}
	counter.WaitQuiet(2*time.Second, time.Minute)
	writes := counter.Total()
	b.ReportMetric(float64(writes)/float64(n), "writes/cluster")
	b.ReportMetric(HeapInuseMiB()-heapBefore, "heap-MiB")
	b.ReportMetric(PeakRSSMiB(), "peak-rss-MiB")
	LogWrites(b, counter, n, "cluster")
}

// createRayClusters creates N RayClusters of 1 head + 3 workers in
// namespace bench.
func createRayClusters(ctx context.Context, b *testing.B, c client.Client, n int) {
	b.Helper()
	for i := 0; i < n; i++ {
		rc := raytesting.MakeRayCluster(fmt.Sprintf("rc-%04d", i), "bench").WorkerGroup("cpu", 3).Obj()
		rc.UID = ""
		if err := c.Create(ctx, rc); err != nil {
			b.Fatal(err)
		}
	}
}
