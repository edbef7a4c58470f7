package plainml

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func TestEnforceMLPolicy(t *testing.T) {
	parallel := trainertesting.TrainerJob("t")
	parallel.Template.Spec.Parallelism = ptr.To[int32](5)
	cases := map[string]struct {
		spec      *trainer.TrainingRuntimeSpec
		job       *trainer.TrainJob
		wantCount int32
		wantEnv   []corev1.EnvVar
	}{
		"no policy: parallelism from the template": {
			spec: trainertesting.MakeRuntimeSpec().ReplicatedJob(parallel).Obj(), job: trainertesting.MakeTrainJob("a", "default").Obj(), wantCount: 5,
		},
		"no policy: TrainJob numNodes and env": {
			spec: trainertesting.MakeRuntimeSpec().ReplicatedJob(parallel).Obj(), job: trainertesting.MakeTrainJob("a", "default").NumNodes(2).Env("A", "1").Obj(),
			wantCount: 2, wantEnv: []corev1.EnvVar{{Name: "A", Value: "1"}},
		},
		"numNodes only policy": {
			spec: trainertesting.MakeRuntimeSpec().NumNodes(3).ReplicatedJob(trainertesting.TrainerJob("t")).Obj(), job: trainertesting.MakeTrainJob("a", "default").Obj(), wantCount: 3,
		},
		"torch runtime is left to the torch plugin": {
			spec: trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("t")).Obj(), job: trainertesting.MakeTrainJob("a", "default").NumNodes(4).Env("A", "1").Obj(),
			wantCount: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info, err := plugin.NewInfo(tc.job, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := (PlainML{}).EnforceMLPolicy(info, tc.job); err != nil {
				t.Fatal(err)
			}
			if info.TrainerPodSet().Count != tc.wantCount {
				t.Errorf("count = %d, want %d", info.TrainerPodSet().Count, tc.wantCount)
			}
			if diff := cmp.Diff(tc.wantEnv, info.TrainerPodSet().FindContainer(trainer.TrainerNodeName).Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}
