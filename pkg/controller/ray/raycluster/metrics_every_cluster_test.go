package raycluster

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// TestMetricsForEveryCluster: kuberay_cluster_info and
// kuberay_cluster_condition_provisioned have a series for every RayCluster,
// as KubeRay's collector (which lists them all at scrape time) has: also
// one another controller manages, an invalid one and one being deleted,
// which the reconciler otherwise leaves early.
func TestMetricsForEveryCluster(t *testing.T) {
	external := raytesting.MakeRayCluster("external", "ns").UID("u1").Obj()
	external.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
	invalid := raytesting.MakeRayCluster("invalid", "ns").UID("u2").Obj()
	invalid.Spec.HeadGroupSpec.Template.Spec.Containers = nil
	deleting := raytesting.MakeRayCluster("deleting", "ns").UID("u3").Obj()
	deleting.Finalizers = []string{"example.com/keep"}
	deleting.DeletionTimestamp = &metav1.Time{Time: statusTestNow}

	scheme := testScheme(t)
	c := fakeClientBuilder(scheme).WithObjects(external, invalid, deleting).
		WithStatusSubresource(&rayv1.RayCluster{}).Build()
	m, reg := newTestMetrics(t)
	r := newReconciler(c, c, nil, m, Config{})
	for _, rc := range []*rayv1.RayCluster{external, invalid, deleting} {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rc)}); err != nil {
			t.Logf("reconcile %s: %v", rc.Name, err)
		}
	}
	series := strings.Join(gatheredSeries(t, reg, "kuberay_cluster_info", "kuberay_cluster_condition_provisioned"), "\n")
	for _, name := range []string{"external", "invalid", "deleting"} {
		for _, metric := range []string{"kuberay_cluster_info{", "kuberay_cluster_condition_provisioned{"} {
			if !strings.Contains(series, metric) || !strings.Contains(series, `name="`+name+`"`) || strings.Count(series, `name="`+name+`"`) != 2 {
				t.Errorf("%s has no %s series:\n%s", name, strings.TrimSuffix(metric, "{"), series)
			}
		}
	}
}
