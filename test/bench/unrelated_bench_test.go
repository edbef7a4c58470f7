package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/test/testenv"
)

// BenchmarkUnrelatedObjects measures what objects that are not Gantry's
// cost it: a namespace of U bare Pods, U ConfigMaps and U Secrets (1 KiB of
// data each; GANTRY_BENCH_UNRELATED, default 10000) that no workload owns
// or references. For U=0 and for U, the manager binary runs every
// workload (as the chart does) as its own process; reported are its RSS
// when /readyz first answers (some controllers' informers may still be
// loading then), then the time to all Pods of N RayClusters (1 head + 3
// workers), its writes per cluster, its CPU seconds and its peak RSS. The
// target: the two runs do not differ measurably.
func BenchmarkUnrelatedObjects(b *testing.B) {
	n := N(100)
	u := 10000
	if v, err := strconv.Atoi(os.Getenv("GANTRY_BENCH_UNRELATED")); err == nil && v >= 0 {
		u = v
	}
	for _, unrelated := range []int{0, u} {
		b.Run(fmt.Sprintf("unrelated=%d", unrelated), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				runUnrelatedObjects(b, n, unrelated)
			}
		})
	}
}

func runUnrelatedObjects(b *testing.B, n, unrelated int) {
	b.StopTimer()
	scheme := slices.Concat(raycluster.Integration().AddToScheme, trainjob.Integration().AddToScheme,
		[]func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme})
	env, err := testenv.StartE(testenv.Options{AddToScheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	for _, ns := range []string{"bench", "noise"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
	}
	createUnrelated(ctx, b, c, unrelated)

	counter := &testenv.WriteCounter{}
	proxy, err := counter.Proxy(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(proxy.Close)
	probe := testenv.FreeAddr(b)
	proc, err := testenv.StartManagerProcess(proxy.Kubeconfig, b.TempDir(), "unrelated", "--health-probe-bind-address", probe)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(proc.Stop)
	if err := proc.WaitReady(probe, 5*time.Minute); err != nil {
		b.Fatalf("the manager did not become ready: %v", err)
	}
	idle := proc.PeakRSSMiB()
	before := counter.Total()

	b.StartTimer()
	start := time.Now()
	createRayClusters(ctx, b, c, n)
	err = Poll(200*time.Millisecond, 20*time.Minute, func() (bool, error) {
		var pods metav1.PartialObjectMetadataList
		pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := c.List(ctx, &pods, client.InNamespace("bench"), client.HasLabels{rayv1.RayClusterLabelKey}); err != nil {
			return false, err
		}
		return len(pods.Items) >= 4*n, nil
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%d Pods not created: %v", 4*n, err)
	}
	counter.WaitQuiet(3*time.Second, 2*time.Minute)
	b.ReportMetric(idle, "rss-at-readyz-MiB")
	b.ReportMetric(proc.PeakRSSMiB(), "peak-rss-MiB")
	b.ReportMetric(elapsed.Seconds(), "s-to-all-pods")
	b.ReportMetric(float64(counter.Total()-before)/float64(n), "writes/cluster")
	b.ReportMetric(proc.CPUSeconds(), "cpu-s")
}

// createUnrelated makes u bare Pods, u ConfigMaps and u Secrets in
// namespace noise, none labelled or referenced by anything of Gantry's.
func createUnrelated(ctx context.Context, b *testing.B, c client.Client, u int) {
	b.Helper()
	data := strings.Repeat("x", 1024)
	work := make(chan client.Object)
	var failed error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for obj := range work {
				if err := c.Create(ctx, obj); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range u {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("noise-%05d", i), Namespace: "noise", Labels: map[string]string{"app": "someone-else"}}
		work <- &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:1", Env: []corev1.EnvVar{{Name: "DATA", Value: data}},
		}}}}
		work <- &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"data": data}}
		work <- &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"data": data}}
	}
	close(work)
	wg.Wait()
	if failed != nil {
		b.Fatalf("creating unrelated objects: %v", failed)
	}
}
