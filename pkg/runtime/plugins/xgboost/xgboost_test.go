package xgboost

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func TestEnforceMLPolicy(t *testing.T) {
	gpu := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	cases := map[string]struct {
		runtimeRequests corev1.ResourceList
		job             *trainertesting.TrainJobWrapper
		wantWorkers     string
	}{
		"CPU: one worker per node":       {job: trainertesting.MakeTrainJob("x", "default").NumNodes(3), wantWorkers: "3"},
		"GPU requests from the TrainJob": {job: trainertesting.MakeTrainJob("x", "default").NumNodes(2).ResourcesPerNode(gpu("4"), nil), wantWorkers: "8"},
		"GPU from the runtime":           {runtimeRequests: gpu("2"), job: trainertesting.MakeTrainJob("x", "default").NumNodes(2), wantWorkers: "4"},
		// Upstream (xgboost.go EnforceMLPolicy) sizes by the TrainJob's
		// resourcesPerNode as written when set, not by its merge with the runtime's.
		"TrainJob resources without GPUs beat the runtime's GPUs": {runtimeRequests: gpu("2"),
			job: trainertesting.MakeTrainJob("x", "default").NumNodes(2).ResourcesPerNode(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}, nil), wantWorkers: "2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := trainertesting.MakeRuntimeSpec().XGBoost().
				ReplicatedJob(trainertesting.ReplicatedJob("node", "trainer", trainertesting.MakeContainer("node", "x").Resources(tc.runtimeRequests, nil).Obj())).Obj()
			job := tc.job.Obj()
			info, err := plugin.NewInfo(job, spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := XGBoost.EnforceMLPolicy(info, job); err != nil {
				t.Fatal(err)
			}
			want := []corev1.EnvVar{
				{Name: EnvTrackerURI, Value: "x-node-0-0.x"}, {Name: EnvTrackerPort, Value: "29500"},
				plugin.CompletionIndexEnv(EnvTaskID), {Name: EnvNumWorker, Value: tc.wantWorkers},
			}
			if diff := cmp.Diff(want, info.TrainerPodSet().FindContainer(trainer.TrainerNodeName).Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateReservedEnv(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().XGBoost().ReplicatedJob(trainertesting.TrainerJob("x")).Obj()
	job := trainertesting.MakeTrainJob("x", "default").Env(EnvNumWorker, "9").Env(EnvTrackerURI, "h").Obj()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	if errs := XGBoost.Validate(info, nil, job); len(errs) != 2 {
		t.Errorf("errors = %v, want one per reserved variable", errs)
	}
}
