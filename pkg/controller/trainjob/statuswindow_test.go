package trainjob

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/runtime"
)

// TestJobsStatusWaitsForItsWindow: the counts a JobSet moves through in its
// first seconds are written once, when the window the first of them opened
// ends; a condition is written at once, with the counts of that moment; a
// job listed with nothing counted yet is nothing to write.
func TestJobsStatusWaitsForItsWindow(t *testing.T) {
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	tj := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns"}}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tj).WithStatusSubresource(tj).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			writes++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	rt, err := runtime.New(runtime.Options{Existing: c, RESTMapper: meta.NewDefaultRESTMapper(nil)})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	r := &Reconciler{client: c, runtime: rt, metrics: metrics, clock: clk, statusWindow: status.NewCoalescer(StatusWindow, clk)}

	jobSet := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns"}}
	counts := func(active, ready, succeeded int32) {
		jobSet.Status.ReplicatedJobsStatus = []jobsetv1alpha2.ReplicatedJobStatus{{Name: trainer.TrainerNodeName, Active: active, Ready: ready, Succeeded: succeeded}}
	}
	steps := []struct {
		name      string
		after     time.Duration // the clock moves by this first
		change    func()
		wantHeld  time.Duration
		wantWrite bool
		wantReady int32 // jobsStatus[0].ready on the server after the step; -1: no jobsStatus
	}{
		{name: "the JobSet lists its job, which counts nothing yet", change: func() { counts(0, 0, 0) }, wantReady: -1},
		{name: "it is active", after: 500 * time.Millisecond, change: func() { counts(1, 0, 0) }, wantHeld: StatusWindow, wantReady: -1},
		{name: "it is ready", after: time.Second, change: func() { counts(1, 1, 0) }, wantHeld: time.Second, wantReady: -1},
		{name: "the window ends", after: time.Second, change: func() {}, wantWrite: true, wantReady: 1},
		{name: "nothing changed", after: time.Minute, change: func() {}, wantReady: 1},
		{name: "a new change opens a new window", change: func() { counts(2, 1, 0) }, wantHeld: StatusWindow, wantReady: 1},
		{name: "a condition is written at once", change: func() {
			counts(0, 0, 1)
			jobSet.Status.Conditions = []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetCompleted), Status: metav1.ConditionTrue,
				Reason: "AllJobsCompleted", Message: "jobset completed successfully", LastTransitionTime: metav1.NewTime(clk.Now())}}
		}, wantWrite: true, wantReady: 0},
		{name: "and closed the window", change: func() { counts(0, 0, 2) }, wantHeld: StatusWindow, wantReady: 0},
		{name: "which ends", after: StatusWindow, change: func() {}, wantWrite: true, wantReady: 0},
		// Kueue reads active: a job that counted something and now counts
		// nothing has changed.
		{name: "counting nothing again is a change", change: func() { counts(0, 0, 0) }, wantHeld: StatusWindow, wantReady: 0},
	}
	for _, s := range steps {
		clk.SetTime(clk.Now().Add(s.after))
		s.change()
		before := writes
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(tj), tj); err != nil {
			t.Fatal(err)
		}
		changed, held, err := r.writeStatus(context.Background(), tj, jobSet, outcome{})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if wrote := writes > before; wrote != s.wantWrite || changed != s.wantWrite || held != s.wantHeld {
			t.Errorf("%s: wrote %v (changed %v), held %v; want wrote %v, held %v", s.name, wrote, changed, held, s.wantWrite, s.wantHeld)
		}
		got := &trainer.TrainJob{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(tj), got); err != nil {
			t.Fatal(err)
		}
		ready := int32(-1)
		if len(got.Status.JobsStatus) > 0 {
			ready = ptr.Deref(got.Status.JobsStatus[0].Ready, 0)
		}
		if ready != s.wantReady {
			t.Errorf("%s: the server has ready %d, want %d", s.name, ready, s.wantReady)
		}
	}
}
