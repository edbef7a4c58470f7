package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func newElasticRuntime(t testing.TB, gate bool, objs ...client.Object) *Runtime {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objs...).Build()
	rt, err := New(Options{Existing: c, ElasticPyTorch: gate})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func elasticRuntimeSpec() *trainer.TrainingRuntimeSpec {
	return trainertesting.MakeRuntimeSpec().NumNodes(2).Torch(nil).TorchElastic(1, 4, nil).ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
}

// A running elastic job whose numNodes changed gets its JobSet again, with
// the new parallelism and completions; the same count, a static runtime or
// a finished JobSet get nothing (a running JobSet is otherwise immutable).
func TestNewObjectsResizesRunningElasticJobSet(t *testing.T) {
	ctx := context.Background()
	running := func(nodes int32, conds ...metav1.Condition) *jobsetv1alpha2.JobSet {
		return &jobsetv1alpha2.JobSet{
			ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "default"},
			Spec: jobsetv1alpha2.JobSetSpec{Suspend: ptr.To(false), ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
				Name: "node", Template: trainertesting.TrainerJob("t:1").Template,
			}}},
			Status: jobsetv1alpha2.JobSetStatus{Conditions: conds},
		}
	}
	withNodes := func(js *jobsetv1alpha2.JobSet, n int32) *jobsetv1alpha2.JobSet {
		js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To(n)
		js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To(n)
		return js
	}
	completed := metav1.Condition{Type: string(jobsetv1alpha2.JobSetCompleted), Status: metav1.ConditionTrue}
	static := trainertesting.MakeRuntimeSpec().NumNodes(2).Torch(nil).ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
	cases := map[string]struct {
		spec     *trainer.TrainingRuntimeSpec
		existing *jobsetv1alpha2.JobSet
		nodes    int32
		want     int32 // the JobSet's nodes; 0: no JobSet built
	}{
		"grown":          {spec: elasticRuntimeSpec(), existing: withNodes(running(2), 2), nodes: 3, want: 3},
		"shrunk":         {spec: elasticRuntimeSpec(), existing: withNodes(running(4), 4), nodes: 1, want: 1},
		"same size":      {spec: elasticRuntimeSpec(), existing: withNodes(running(3), 3), nodes: 3},
		"finished":       {spec: elasticRuntimeSpec(), existing: withNodes(running(2, completed), 2), nodes: 3},
		"static runtime": {spec: static, existing: withNodes(running(2), 2), nodes: 3},
		"completions out of step": {spec: elasticRuntimeSpec(), existing: func() *jobsetv1alpha2.JobSet {
			js := withNodes(running(3), 3)
			js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To[int32](2)
			return js
		}(), nodes: 3, want: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := trainertesting.MakeTrainJob("tj", "default").NumNodes(tc.nodes).Image("img").Obj()
			res, err := newElasticRuntime(t, true, tc.existing).NewObjects(ctx, job, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got *jobsetv1alpha2.JobSet
			for _, c := range res.Components {
				if js, ok := c.Object.(*jobsetv1alpha2.JobSet); ok {
					got = js
				}
			}
			switch {
			case tc.want == 0 && got != nil:
				t.Fatalf("built a JobSet for a running job that needs no resize")
			case tc.want == 0:
			case got == nil:
				t.Fatalf("no JobSet built; want one with %d nodes", tc.want)
			default:
				rj := got.Spec.ReplicatedJobs[0].Template.Spec
				if ptr.Deref(rj.Parallelism, 0) != tc.want || ptr.Deref(rj.Completions, 0) != tc.want {
					t.Errorf("parallelism/completions = %v/%v, want %d", ptr.Deref(rj.Parallelism, 0), ptr.Deref(rj.Completions, 0), tc.want)
				}
				if ptr.Deref(got.Spec.Suspend, true) {
					t.Errorf("the resized JobSet is suspended")
				}
			}
		})
	}
}

func TestNumNodesUpdateRule(t *testing.T) {
	static := trainertesting.MakeRuntimeSpec().NumNodes(2).Torch(nil).ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
	job := func() *trainertesting.TrainJobWrapper {
		return trainertesting.MakeTrainJob("tj", "default").NumNodes(2).Image("img")
	}
	finished := metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue}
	queued := func(w *trainertesting.TrainJobWrapper) *trainertesting.TrainJobWrapper {
		w.Labels = map[string]string{KueueQueueNameLabel: "team"}
		return w
	}
	cases := map[string]struct {
		gate     bool
		spec     *trainer.TrainingRuntimeSpec
		old, new *trainer.TrainJob
		want     string // substring of the error; empty: allowed
	}{
		"elastic, gate on": {gate: true, spec: elasticRuntimeSpec(), old: job().Obj(), new: job().NumNodes(3).Obj()},
		// A job admitted while the gate was on is still updated (suspend,
		// labels) once it is off; only its resize is refused.
		"elastic, unchanged, gate off": {spec: elasticRuntimeSpec(), old: job().Obj(), new: job().Obj()},
		"elastic, gate off":            {spec: elasticRuntimeSpec(), old: job().Obj(), new: job().NumNodes(3).Obj(), want: "TrainJobElasticPyTorch"},
		"static runtime":               {gate: true, spec: static, old: job().Obj(), new: job().NumNodes(3).Obj(), want: "mlPolicy.torch.elasticPolicy"},
		"above maxNodes":               {gate: true, spec: elasticRuntimeSpec(), old: job().Obj(), new: job().NumNodes(5).Obj(), want: "maxNodes (4)"},
		"removed":                      {gate: true, spec: elasticRuntimeSpec(), old: job().Obj(), new: func() *trainer.TrainJob { j := job().Obj(); j.Spec.Trainer.NumNodes = nil; return j }(), want: "not be removed"},
		"finished":                     {gate: true, spec: elasticRuntimeSpec(), old: job().Condition(finished).Obj(), new: job().NumNodes(3).Condition(finished).Obj(), want: "finished"},
		"Kueue, running":               {gate: true, spec: elasticRuntimeSpec(), old: queued(job()).Obj(), new: queued(job()).NumNodes(3).Obj(), want: "Kueue admitted"},
		"Kueue, suspended":             {gate: true, spec: elasticRuntimeSpec(), old: queued(job()).Suspend(true).Obj(), new: queued(job()).Suspend(true).NumNodes(3).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := newElasticRuntime(t, tc.gate).Validate(tc.old, tc.new, tc.spec)
			got := fmt.Sprint(errs)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("errors %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// A new job on an elastic runtime needs the gate at admission; the
// controller builds jobs admitted while it was on even when it is off.
func TestElasticGateAtAdmissionOnly(t *testing.T) {
	job := trainertesting.MakeTrainJob("tj", "default").NumNodes(2).Image("img").Obj()
	errs := newElasticRuntime(t, false).Validate(nil, job, elasticRuntimeSpec())
	if !strings.Contains(fmt.Sprint(errs), "needs the manager's TrainJobElasticPyTorch feature gate (off)") {
		t.Errorf("admission with the gate off: %v", errs)
	}
	if errs := newElasticRuntime(t, true).Validate(nil, job, elasticRuntimeSpec()); len(errs) > 0 {
		t.Errorf("admission with the gate on: %v", errs)
	}
	res, err := newElasticRuntime(t, false).NewObjects(context.Background(), job, elasticRuntimeSpec())
	if err != nil {
		t.Fatalf("building an admitted elastic job with the gate off: %v", err)
	}
	if len(res.Components) == 0 {
		t.Fatal("no JobSet built")
	}
}
