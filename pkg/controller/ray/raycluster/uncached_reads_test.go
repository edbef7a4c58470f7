package raycluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// serviceGets counts the Gets of Services through the reader it wraps.
type serviceGets struct {
	client.Reader
	names map[string]int
}

func (s *serviceGets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Service); ok {
		s.names[key.Name]++
	}
	return s.Reader.Get(ctx, key, obj, opts...)
}

// TestNewClusterAsksTheAPIServerOnceForItsHeadService: the first
// reconcile of a cluster finds no head Service in the cache and asks the
// API server once whether one exists (a user's, or KubeRay's), for both
// the immutable-field check and the ownership check: bench-compare showed
// two uncached GETs of the same missing Service in one pass.
func TestNewClusterAsksTheAPIServerOnceForItsHeadService(t *testing.T) {
	cfg := ConfigFromEnv(func(string) string { return "" }, nil)
	rc := raytesting.MakeRayCluster("rc", "ns").UID("u1").WorkerGroup("cpu", 1).Obj()
	c := fakeClientBuilder(testScheme(t)).WithObjects(rc).WithStatusSubresource(&rayv1.RayCluster{}).Build()
	uncached := &serviceGets{Reader: c, names: map[string]int{}}
	r := newReconciler(c, uncached, nil, nil, cfg)
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rc)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	head := podspec.HeadServiceName(rc)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: head}, &corev1.Service{}); err != nil {
		t.Fatalf("the head Service was not created: %v", err)
	}
	if n := uncached.names[head]; n != 1 {
		t.Errorf("the head Service %s was read %d times from the API server, want 1 (all uncached Service reads: %v)", head, n, uncached.names)
	}
}
