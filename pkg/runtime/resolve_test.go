package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func TestResolveSpec(t *testing.T) {
	clusterSpec := trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("cluster:1")).Obj()
	nsSpec := trainertesting.MakeRuntimeSpec().JAX().ReplicatedJob(trainertesting.TrainerJob("ns:1")).Obj()
	objs := []client.Object{
		trainertesting.MakeClusterTrainingRuntime("torch").Spec(clusterSpec).Obj(),
		trainertesting.MakeTrainingRuntime("jax", "default").Spec(nsSpec).Obj(),
		trainertesting.MakeTrainingRuntime("elsewhere", "other").Spec(nsSpec).Obj(),
	}
	cases := map[string]struct {
		job             *trainer.TrainJob
		want            *trainer.TrainingRuntimeSpec
		wantNotFound    bool
		wantUnsupported bool
	}{
		"cluster runtime":              {job: trainertesting.MakeTrainJob("a", "default").RuntimeRef(trainer.ClusterTrainingRuntimeKind, "torch").Obj(), want: clusterSpec},
		"kind defaults to cluster":     {job: withoutKind(trainertesting.MakeTrainJob("a", "default").RuntimeRef("", "torch").Obj()), want: clusterSpec},
		"namespaced runtime":           {job: trainertesting.MakeTrainJob("a", "default").RuntimeRef(trainer.TrainingRuntimeKind, "jax").Obj(), want: nsSpec},
		"runtime of another namespace": {job: trainertesting.MakeTrainJob("a", "default").RuntimeRef(trainer.TrainingRuntimeKind, "elsewhere").Obj(), wantNotFound: true},
		"missing cluster runtime":      {job: trainertesting.MakeTrainJob("a", "default").RuntimeRef(trainer.ClusterTrainingRuntimeKind, "nope").Obj(), wantNotFound: true},
		"unknown kind":                 {job: trainertesting.MakeTrainJob("a", "default").RuntimeRef("Runtime", "torch").Obj(), wantUnsupported: true},
		"unknown group":                {job: trainertesting.MakeTrainJob("a", "default").RuntimeRefGroup("example.com").Obj(), wantUnsupported: true},
	}
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objs...).Build()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ResolveSpec(context.Background(), c, tc.job)
			if IsRuntimeNotFound(err) != tc.wantNotFound || errors.Is(err, ErrUnsupportedRuntimeKind) != tc.wantUnsupported {
				t.Fatalf("err = %v, want notFound=%v unsupported=%v", err, tc.wantNotFound, tc.wantUnsupported)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func withoutKind(job *trainer.TrainJob) *trainer.TrainJob {
	job.Spec.RuntimeRef.Kind, job.Spec.RuntimeRef.APIGroup = nil, nil
	return job
}

func TestResolveSpecPassesOtherErrorsThrough(t *testing.T) {
	boom := errors.New("apiserver down")
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return boom
		},
	}).Build()
	_, err := ResolveSpec(context.Background(), c, trainertesting.MakeTrainJob("a", "default").Obj())
	if !errors.Is(err, boom) || IsRuntimeNotFound(err) {
		t.Fatalf("err = %v, want the reader's error unchanged", err)
	}
	if cond := CreatedCondition(err); cond.Reason != trainer.TrainJobJobsCreationFailedReason {
		t.Errorf("a transient error maps to reason %s", cond.Reason)
	}
}

func TestCreatedCondition(t *testing.T) {
	cases := map[string]struct {
		err        error
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		"success":        {nil, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason},
		"no runtime":     {&RuntimeNotFoundError{Kind: "ClusterTrainingRuntime", Name: "x"}, metav1.ConditionFalse, trainer.TrainJobRuntimeNotFoundReason},
		"wrapped no rt":  {fmt.Errorf("resolving: %w", &RuntimeNotFoundError{Kind: "TrainingRuntime", Namespace: "ns", Name: "x"}), metav1.ConditionFalse, trainer.TrainJobRuntimeNotFoundReason},
		"bad kind":       {fmt.Errorf("x: %w", ErrUnsupportedRuntimeKind), metav1.ConditionFalse, trainer.TrainJobJobsBuildFailedReason},
		"apply conflict": {errors.New("conflict"), metav1.ConditionFalse, trainer.TrainJobJobsCreationFailedReason},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CreatedCondition(tc.err)
			if got.Type != trainer.TrainJobCreated || got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.Message == "" {
				t.Errorf("got %+v, want %s/%s", got, tc.wantStatus, tc.wantReason)
			}
		})
	}
	if c, ok := FailedCondition(fmt.Errorf("x: %w", ErrUnsupportedRuntimeKind)); !ok || c.Reason != trainer.TrainJobRuntimeNotSupportedReason || c.Status != metav1.ConditionTrue {
		t.Errorf("FailedCondition for an unsupported kind = %+v, %v", c, ok)
	}
	if _, ok := FailedCondition(&RuntimeNotFoundError{Name: "x"}); ok {
		t.Error("a missing runtime must not fail the TrainJob: it recovers when the runtime appears")
	}
}
