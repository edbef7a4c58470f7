package raycluster

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// TestStatusWriteRequeuesOnlyForTheNextStep: a status write asks for the
// quick requeue only when the Pod decisions read what it changed (the
// Suspending and Suspended conditions of the suspend state machine). A
// cluster whose write only reports that its Pods became ready has nothing
// left to do, and a reconcile 2 s later would be one more per cluster in a
// queue every cluster waits in; it gets the periodic resync.
func TestStatusWriteRequeuesOnlyForTheNextStep(t *testing.T) {
	cfg := ConfigFromEnv(func(string) string { return "" }, nil)
	cases := []struct {
		name    string
		suspend bool
		pods    bool
		// status the cluster has before the reconcile
		conditions []metav1.Condition
		state      rayv1.ClusterState
		want       ctrl.Result
		wantCond   rayv1.RayClusterConditionType // true after the write
	}{
		{name: "pods became ready", pods: true, want: ctrl.Result{RequeueAfter: cfg.DefaultRequeue}},
		{name: "suspend asked: Suspending now, Pods deleted next", suspend: true, pods: true,
			state: rayv1.Ready, want: ctrl.Result{RequeueAfter: ShortRequeue}, wantCond: rayv1.RayClusterSuspending},
		{name: "resume asked: Suspended ends, Pods created next",
			conditions: []metav1.Condition{{Type: string(rayv1.RayClusterSuspended), Status: metav1.ConditionTrue, Reason: rayv1.RayClusterSuspendedReason}},
			state:      rayv1.Suspended, want: ctrl.Result{RequeueAfter: ShortRequeue}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := raytesting.MakeRayCluster("rc", "ns").UID("u1").WorkerGroup("cpu", 2).Obj()
			rc.Spec.Suspend = ptr.To(tc.suspend)
			rc.Status.State = tc.state
			rc.Status.Conditions = tc.conditions
			objs := []client.Object{rc}
			if tc.pods {
				head := podspec.BuildHeadPod(rc, cfg.Build)
				head.Name = "rc-head"
				objs = append(objs, readyPod(head))
				for i := range 2 {
					w := podspec.BuildWorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], podspec.WorkerReplica{Index: i}, cfg.Build)
					w.Name = fmt.Sprintf("rc-cpu-worker-%d", i)
					objs = append(objs, readyPod(w))
				}
			}
			scheme := testScheme(t)
			c := fakeClientBuilder(scheme).WithObjects(objs...).
				WithStatusSubresource(&rayv1.RayCluster{}).Build()
			r := newReconciler(c, c, nil, nil, cfg)
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rc)})
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			got := &rayv1.RayCluster{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(rc), got); err != nil {
				t.Fatal(err)
			}
			if tc.pods && !tc.suspend && got.Status.State != rayv1.Ready {
				t.Fatalf("state %q after the reconcile, want ready: the status was not written", got.Status.State)
			}
			if tc.wantCond != "" && !meta.IsStatusConditionTrue(got.Status.Conditions, string(tc.wantCond)) {
				t.Fatalf("%s is not true after the reconcile: %+v", tc.wantCond, got.Status.Conditions)
			}
			if res != tc.want {
				t.Errorf("Reconcile = %+v, want %+v", res, tc.want)
			}
		})
	}
}

func readyPod(p corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.0.0.2"
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return &p
}

// TestStaleSuspendStatusRequeuesQuickly: the cache can lag the reconcile's
// own status write. A reconcile that reads the cluster without the
// Suspending condition it wrote decides no Pod deletion, finds on the
// write's Conflict that the API server already has Suspending, and so
// writes nothing. It must still come back soon: no event will (status
// changes do not enqueue), and the Pods would stay until the periodic
// resync, 5 minutes later.
func TestStaleSuspendStatusRequeuesQuickly(t *testing.T) {
	cfg := ConfigFromEnv(func(string) string { return "" }, nil)
	rc := raytesting.MakeRayCluster("rc", "ns").UID("u1").WorkerGroup("cpu", 1).Obj()
	rc.Spec.Suspend = ptr.To(true)
	head := podspec.BuildHeadPod(rc, cfg.Build)
	head.Name = "rc-head"
	c := fakeClientBuilder(testScheme(t)).WithObjects(rc, readyPod(head)).
		WithStatusSubresource(&rayv1.RayCluster{}).Build()
	ctx := context.Background()
	stale := &rayv1.RayCluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(rc), stale); err != nil {
		t.Fatal(err)
	}
	// The write an earlier reconcile made, which the cache has not seen.
	written := stale.DeepCopy()
	meta.SetStatusCondition(&written.Status.Conditions, metav1.Condition{Type: string(rayv1.RayClusterSuspending),
		Status: metav1.ConditionTrue, Reason: string(rayv1.RayClusterSuspending)})
	if err := c.Status().Update(ctx, written); err != nil {
		t.Fatal(err)
	}
	gets := 0
	cache := interceptor.NewClient(c, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if rcObj, ok := obj.(*rayv1.RayCluster); ok {
			gets++
			if gets == 1 {
				stale.DeepCopyInto(rcObj)
				return nil
			}
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	r := newReconciler(cache, cache, nil, nil, cfg)
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rc)})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if gets < 2 {
		t.Fatalf("the status write did not read the cluster again (%d reads): the test did not make the Conflict it is about", gets)
	}
	if res.RequeueAfter != ShortRequeue {
		t.Errorf("Reconcile = %+v, want the quick requeue (%v): the Pods of a Suspending cluster would wait for the resync", res, ShortRequeue)
	}
}
