package raycluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/apply"
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

// TestNewClusterCreatesItsHeadServiceWithoutReadingPastTheCache: the first
// reconcile of a cluster finds no head Service in the cache and creates it
// with one request, without first asking the API server whether one exists
// (bench-compare: that read, then an apply, took two round trips before
// every new cluster's Pods). A Service that exists outside the cache (a
// user's, or KubeRay's) is then asked of the API server once, for both the
// immutable-field and the ownership check, and left as it is.
func TestNewClusterCreatesItsHeadServiceWithoutReadingPastTheCache(t *testing.T) {
	cfg := ConfigFromEnv(func(string) string { return "" }, nil)
	rc := raytesting.MakeRayCluster("rc", "ns").UID("u1").WorkerGroup("cpu", 1).Obj()
	head := podspec.HeadServiceName(rc)

	t.Run("new", func(t *testing.T) {
		c := fakeClientBuilder(testScheme(t)).WithObjects(rc.DeepCopy()).WithStatusSubresource(&rayv1.RayCluster{}).Build()
		uncached := &serviceGets{Reader: c, names: map[string]int{}}
		r := newReconciler(c, uncached, nil, nil, cfg)
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rc)}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		svc := &corev1.Service{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: head}, svc); err != nil {
			t.Fatalf("the head Service was not created: %v", err)
		}
		if svc.Annotations[apply.AnnotationAppliedHash] == "" {
			t.Errorf("the created head Service has no %s: the next reconcile would apply it again", apply.AnnotationAppliedHash)
		}
		if n := uncached.names[head]; n != 0 {
			t.Errorf("the head Service %s was read %d times from the API server, want 0 (all uncached Service reads: %v)", head, n, uncached.names)
		}
	})

	t.Run("a user's", func(t *testing.T) {
		users := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: head, Labels: map[string]string{"mine": "yes"}}}
		c := fakeClientBuilder(testScheme(t)).WithObjects(rc.DeepCopy(), users).WithStatusSubresource(&rayv1.RayCluster{}).Build()
		// The cache holds only Gantry's objects: the user's Service is
		// seen through the uncached reader alone.
		cache := hidingServices{Client: c}
		uncached := &serviceGets{Reader: c, names: map[string]int{}}
		r := newReconciler(cache, uncached, nil, nil, cfg)
		_, _ = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rc)})
		if n := uncached.names[head]; n != 1 {
			t.Errorf("the user's Service %s was read %d times from the API server, want 1", head, n)
		}
		got := &corev1.Service{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: head}, got); err != nil {
			t.Fatal(err)
		}
		if got.Labels["mine"] != "yes" || len(got.OwnerReferences) != 0 || got.Annotations[apply.AnnotationAppliedHash] != "" {
			t.Errorf("the user's Service was changed: %+v", got.ObjectMeta)
		}
	})
}

// hidingServices is a cache that holds no Services.
type hidingServices struct{ client.Client }

func (h hidingServices) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Service); ok {
		return apierrors.NewNotFound(corev1.Resource("services"), key.Name)
	}
	return h.Client.Get(ctx, key, obj, opts...)
}
