package raycluster

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

const otherFinalizer = "example.com/other-controller"

// racingFinalizerClient is a client whose first write to the RayCluster is
// preceded by another controller adding its own finalizer: the write Gantry
// computed from its earlier read must not drop it.
func racingFinalizerClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme := testScheme(t)
	base := fakeClientBuilder(scheme).WithObjects(objs...).Build()
	raced := false
	secondWriter := func(ctx context.Context, c client.WithWatch, obj client.Object) {
		if _, ok := obj.(*rayv1.RayCluster); !ok || raced {
			return
		}
		raced = true
		cur := &rayv1.RayCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			t.Fatal(err)
		}
		cur.Finalizers = append(cur.Finalizers, otherFinalizer)
		if err := c.Update(ctx, cur); err != nil {
			t.Fatalf("the other controller's update: %v", err)
		}
	}
	return interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			secondWriter(ctx, c, obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			secondWriter(ctx, c, obj)
			return c.Update(ctx, obj, opts...)
		},
	})
}

// reconcileFinalizer runs the finalizer step on a fresh read until it
// settles (a conflict is retried on the next reconcile, as the work queue
// would), at most a few times.
func reconcileFinalizer(t *testing.T, r *Reconciler, key client.ObjectKey) *rayv1.RayCluster {
	t.Helper()
	ctx := context.Background()
	for range 3 {
		cluster := &rayv1.RayCluster{}
		if err := r.client.Get(ctx, key, cluster); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.reconcileGCSFTFinalizer(ctx, cluster); err != nil {
			t.Logf("reconcile: %v", err)
		}
	}
	cluster := &rayv1.RayCluster{}
	if err := r.client.Get(ctx, key, cluster); err != nil {
		return nil
	}
	return cluster
}

func TestGCSFTFinalizerAddKeepsAConcurrentFinalizer(t *testing.T) {
	rc := raytesting.MakeRayCluster("ft", "ns").GCSFaultTolerance("redis:6379").Obj()
	c := racingFinalizerClient(t, rc)
	r := newReconciler(c, c, nil, nil, Config{EnableGCSFTRedisCleanup: true})

	got := reconcileFinalizer(t, r, client.ObjectKeyFromObject(rc))
	for _, f := range []string{rayv1.GCSFaultToleranceRedisCleanupFinalizer, otherFinalizer} {
		if !containsString(got.Finalizers, f) {
			t.Errorf("finalizer %s missing; finalizers = %v", f, got.Finalizers)
		}
	}
}

func TestGCSFTFinalizerRemoveKeepsAConcurrentFinalizer(t *testing.T) {
	rc := raytesting.MakeRayCluster("ft", "ns").GCSFaultTolerance("redis:6379").Obj()
	rc.Finalizers = []string{rayv1.GCSFaultToleranceRedisCleanupFinalizer, "example.com/first"}
	rc.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
	now := metav1.Now()
	done := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: RedisCleanupJobName(rc), Namespace: rc.Namespace},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}},
	}
	c := racingFinalizerClient(t, rc, done)
	r := newReconciler(c, c, nil, nil, Config{EnableGCSFTRedisCleanup: true})

	got := reconcileFinalizer(t, r, client.ObjectKeyFromObject(rc))
	if got == nil {
		t.Fatal("the RayCluster is gone: the other controllers' finalizers were dropped")
	}
	if containsString(got.Finalizers, rayv1.GCSFaultToleranceRedisCleanupFinalizer) {
		t.Errorf("Gantry's finalizer was not removed: %v", got.Finalizers)
	}
	for _, f := range []string{"example.com/first", otherFinalizer} {
		if !containsString(got.Finalizers, f) {
			t.Errorf("finalizer %s lost; finalizers = %v", f, got.Finalizers)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
