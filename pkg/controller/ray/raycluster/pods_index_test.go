package raycluster

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// TestPodListsUseTheClusterIndex: every Pod list of a reconcile goes
// through IndexPodCluster, so its cost is the cluster's own Pods and not
// every Pod of the namespace. A list by the ray.io/cluster label alone
// made the cache match the labels of every Pod in the namespace, several
// times per reconcile: a new manager took 22 s to reconcile 1,000
// converged clusters once, with 5,000 Pods in their namespace. The Pods of
// another cluster whose name shares a prefix are not listed.
func TestPodListsUseTheClusterIndex(t *testing.T) {
	cfg := ConfigFromEnv(func(string) string { return "" }, nil)
	var objs []client.Object
	for _, name := range []string{"rc", "rc-2"} {
		rc := raytesting.MakeRayCluster(name, "ns").UID(name).WorkerGroup("cpu", 2).Obj()
		head := podspec.BuildHeadPod(rc, cfg.Build)
		head.Name = name + "-head"
		objs = append(objs, rc, readyPod(head))
		for i := range 2 {
			w := podspec.BuildWorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], podspec.WorkerReplica{Index: i}, cfg.Build)
			w.Name = fmt.Sprintf("%s-cpu-worker-%d", name, i)
			objs = append(objs, readyPod(w))
		}
	}
	c := fakeClientBuilder(testScheme(t)).WithObjects(objs...).WithStatusSubresource(&rayv1.RayCluster{}).Build()
	var lists int
	var unindexed []string
	counting := interceptor.NewClient(c, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*corev1.PodList); ok {
			lists++
			o := (&client.ListOptions{}).ApplyOptions(opts)
			if o.FieldSelector == nil || !o.FieldSelector.Matches(fields.Set{IndexPodCluster: "rc"}) {
				unindexed = append(unindexed, fmt.Sprintf("fields %v, labels %v", o.FieldSelector, o.LabelSelector))
			}
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return err
		}
		if pods, ok := list.(*corev1.PodList); ok {
			for _, p := range pods.Items {
				if p.Labels[rayv1.RayClusterLabelKey] != "rc" {
					t.Errorf("cluster rc listed Pod %s of cluster %q", p.Name, p.Labels[rayv1.RayClusterLabelKey])
				}
			}
		}
		return nil
	}})
	r := newReconciler(counting, counting, nil, nil, cfg)
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "rc"}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if lists == 0 {
		t.Fatal("the reconcile listed no Pods: the test does not exercise listPods")
	}
	if len(unindexed) > 0 {
		t.Errorf("%d of %d Pod lists not through %s: %v", len(unindexed), lists, IndexPodCluster, unindexed)
	}
}

// TestAReconcileListsItsPodsOnce: the head, each worker group and the
// status all read the Pods one list returned, not a list each.
func TestAReconcileListsItsPodsOnce(t *testing.T) {
	cfg := ConfigFromEnv(func(string) string { return "" }, nil)
	rc := raytesting.MakeRayCluster("rc", "ns").UID("rc").WorkerGroup("cpu", 2).WorkerGroup("gpu", 1).Obj()
	head := podspec.BuildHeadPod(rc, cfg.Build)
	head.Name = "rc-head"
	objs := []client.Object{rc, readyPod(head)}
	for g := range rc.Spec.WorkerGroupSpecs {
		group := &rc.Spec.WorkerGroupSpecs[g]
		for i := range int(*group.Replicas) {
			w := podspec.BuildWorkerPod(rc, group, podspec.WorkerReplica{Index: i}, cfg.Build)
			w.Name = fmt.Sprintf("rc-%s-worker-%d", group.GroupName, i)
			objs = append(objs, readyPod(w))
		}
	}
	c := fakeClientBuilder(testScheme(t)).WithObjects(objs...).WithStatusSubresource(&rayv1.RayCluster{}).Build()
	var lists int
	counting := interceptor.NewClient(c, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*corev1.PodList); ok {
			lists++
		}
		return c.List(ctx, list, opts...)
	}})
	r := newReconciler(counting, counting, nil, nil, cfg)
	for round := range 2 {
		lists = 0
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "rc"}}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if lists != 1 {
			t.Errorf("reconcile %d listed the cluster's Pods %d times, want once", round+1, lists)
		}
	}
}
