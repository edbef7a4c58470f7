package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// BenchmarkTrainJobCreate submits N torch TrainJobs (numNodes 2) against the
// shipped torch-distributed runtime and reports the time until every
// JobSet exists and every TrainJob reports Created, the manager's API
// writes per job and its memory.
func BenchmarkTrainJobCreate(b *testing.B) {
	n := N(100)
	for i := 0; i < b.N; i++ {
		runTrainJobCreate(b, n, false)
	}
}

// BenchmarkTrainJobCreateProcess runs the manager binary as its own
// process to measure its peak RSS alone.
func BenchmarkTrainJobCreateProcess(b *testing.B) {
	n := N(100)
	for i := 0; i < b.N; i++ {
		runTrainJobCreate(b, n, true)
	}
}

func runTrainJobCreate(b *testing.B, n int, process bool) {
	b.StopTimer()
	env, err := testenv.StartE(testenv.Options{AddToScheme: trainjob.Integration().AddToScheme})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	c := env.Client

	setupTorchRuntimeAndNamespace(ctx, b, c)

	counter := &testenv.WriteCounter{}
	var proc *testenv.ManagerProcess
	if process {
		proc, err = testenv.StartManagerProcess(env.KubeConfig(), b.TempDir(), "bench", "--controllers", trainjob.Name)
		if err != nil {
			b.Fatal(err)
		}
		defer proc.Stop()
		defer cancel()
	} else {
		reg := &workload.Registry{}
		reg.MustRegister(trainjob.Integration())
		done, err := StartManager(ctx, env.Config, reg, counter)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { cancel(); <-done }()
	}

	heapBefore := HeapInuseMiB()
	b.StartTimer()
	start := time.Now()
	for i := 0; i < n; i++ {
		tj := trainertesting.MakeTrainJob(fmt.Sprintf("tj-%04d", i), "bench").
			RuntimeRef(trainer.ClusterTrainingRuntimeKind, "torch-distributed").NumNodes(2).Obj()
		if err := c.Create(ctx, tj); err != nil {
			b.Fatal(err)
		}
	}
	err = Poll(200*time.Millisecond, 20*time.Minute, func() (bool, error) {
		var js jobsetv1alpha2.JobSetList
		if err := c.List(ctx, &js, client.InNamespace("bench")); err != nil {
			return false, err
		}
		return len(js.Items) >= n, nil
	})
	toJobSets := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%d JobSets not created: %v", n, err)
	}
	// With Trainer v2.3's condition set (the default) a built job's status
	// has no condition, and without a JobSet controller nothing reports
	// jobs: there is no status to wait for.
	b.ReportMetric(toJobSets.Seconds(), "s-to-all-jobsets")
	if process {
		b.ReportMetric(proc.PeakRSSMiB(), "manager-peak-rss-MiB")
		return
	}
	counter.WaitQuiet(2*time.Second, time.Minute)
	b.ReportMetric(float64(counter.Total())/float64(n), "writes/job")
	b.ReportMetric(HeapInuseMiB()-heapBefore, "heap-MiB")
	b.ReportMetric(PeakRSSMiB(), "peak-rss-MiB")
	LogWrites(b, counter, n, "job")
}

// setupTorchRuntimeAndNamespace installs the shipped torch-distributed
// ClusterTrainingRuntime and the namespace "bench".
func setupTorchRuntimeAndNamespace(ctx context.Context, b *testing.B, c client.Client) {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "runtimes", "torch_distributed.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	rt := &trainer.ClusterTrainingRuntime{}
	if err := yaml.UnmarshalStrict(raw, rt); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, rt); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		b.Fatal(err)
	}
}
