//go:build benchcompare

package benchcompare

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/test/bench"
)

// floorWorkers is how many clusters' objects the floor run creates at once.
const floorWorkers = 16

// runFloor is a ray run with no operator (BENCH_COMPARE_ONLY=floor): the
// harness creates the same RayClusters and then, itself, each one's head
// Service and Pods from Gantry's builders, floorWorkers clusters at a
// time, through one client at the operators' limit (QPS 100, burst 200).
// No reconcile, status write or Event is made. The time until every Pod
// exists and is Ready is what the control plane (API server, etcd,
// scheduler, kwok, controller-manager) needs for those objects on this
// machine: no operator that makes them can be faster.
func runFloor(t *testing.T, p pairing, n int, clusterName string) {
	if p.name != "ray" {
		t.Skipf("the floor is measured for the ray pairing only, not %s", p.name)
	}
	ctx := context.Background()
	cl := startCluster(t, clusterName, p.nodes(n))
	p.gantry.install(t, cl)
	if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(cl.cfg)
	cfg.QPS, cfg.Burst = qps, burst
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	endAccount := cl.accountControlPlane(t)
	start := time.Now()
	clusters := make(chan *rayv1.RayCluster, n)
	errs := make(chan error, floorWorkers)
	var wg sync.WaitGroup
	for range floorWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rc := range clusters {
				if err := makeClusterObjects(ctx, c, rc); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		rc := p.create(i, n).(*rayv1.RayCluster)
		if err := cl.c.Create(ctx, rc); err != nil {
			t.Fatal(err)
		}
		clusters <- rc
	}
	close(clusters)
	submitted := time.Since(start)

	var phases []time.Duration
	for _, done := range []func() (bool, error){
		func() (bool, error) { return p.phases[0].done(ctx, cl.c, n) },
		func() (bool, error) { return allPodsReady(ctx, cl.c, 4*n) },
	} {
		if err := bench.Poll(pollEvery(n*p.podsPer), 90*time.Minute, func() (bool, error) {
			select {
			case err := <-errs:
				return false, err
			default:
			}
			return done()
		}); err != nil {
			t.Fatalf("floor: %v", err)
		}
		phases = append(phases, time.Since(start))
	}
	wg.Wait()
	cpu := endAccount()
	t.Logf("floor, N=%d (%d Pods), no operator (the harness makes each cluster's head Service and Pods, %d clusters at a time, QPS %d / burst %d): "+
		"every RayCluster created at %.1f s, every Pod exists at %.1f s, every Pod is Ready at %.1f s; control plane CPU seconds: %s",
		n, 4*n, floorWorkers, qps, burst, submitted.Seconds(), phases[0].Seconds(), phases[1].Seconds(), formatCPU(cpu))
}

// makeClusterObjects creates rc's head Service, head Pod and worker Pods
// as Gantry's builders make them, each controlled by rc.
func makeClusterObjects(ctx context.Context, c client.Client, rc *rayv1.RayCluster) error {
	opts := podspec.BuildOptions{}
	objs := []client.Object{podspec.BuildHeadService(rc, opts)}
	head := podspec.BuildHeadPod(rc, opts)
	objs = append(objs, &head)
	for _, g := range rc.Spec.WorkerGroupSpecs {
		for i := range int(*g.Replicas) {
			w := podspec.BuildWorkerPod(rc, &g, podspec.WorkerReplica{Name: fmt.Sprintf("%s-%d", g.GroupName, i), Index: i}, opts)
			objs = append(objs, &w)
		}
	}
	for _, obj := range objs {
		if err := controllerutil.SetControllerReference(rc, obj, scheme); err != nil {
			return err
		}
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s of %s: %w", obj.GetName()+obj.GetGenerateName(), rc.Name, err)
		}
	}
	return nil
}

// allPodsReady says whether at least want Ray Pods are Ready.
func allPodsReady(ctx context.Context, c client.Client, want int) (bool, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.HasLabels{rayv1.RayClusterLabelKey}); err != nil {
		return false, err
	}
	ready := 0
	for _, pod := range list.Items {
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready >= want, nil
}
