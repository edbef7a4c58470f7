package raycluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// testScheme knows the built-in kinds and KubeRay's, for fake clients.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, rayv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// fakeClientBuilder is a fake client builder for scheme with the indexes
// the manager's cache has (IndexPodCluster), which listPods needs.
func fakeClientBuilder(scheme *runtime.Scheme) *fake.ClientBuilder {
	return fake.NewClientBuilder().WithScheme(scheme).WithIndex(&corev1.Pod{}, IndexPodCluster, podClusterIndex)
}
