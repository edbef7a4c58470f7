package jax

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func TestEnforceMLPolicy(t *testing.T) {
	port := []corev1.ContainerPort{{ContainerPort: 29500}}
	cases := map[string]struct {
		spec      *trainer.TrainingRuntimeSpec
		job       *trainer.TrainJob
		wantEnv   []corev1.EnvVar
		wantPorts []corev1.ContainerPort
		wantErr   bool
	}{
		// The user's env is the JobSet render's, after these (Trainer
		// v2.3's JobSet builder upserts it last).
		"JAX variables, not the user's env": {
			spec: trainertesting.MakeRuntimeSpec().JAX().ReplicatedJob(trainertesting.TrainerJob("j")).Obj(),
			job:  trainertesting.MakeTrainJob("job", "default").NumNodes(4).Env("DATA", "/d").Obj(),
			wantEnv: []corev1.EnvVar{{Name: EnvNumProcesses, Value: "4"},
				plugin.CompletionIndexEnv(EnvProcessID), {Name: EnvCoordinatorAddress, Value: "job-node-0-0.job:29500"}},
			wantPorts: port,
		},
		"runtime numNodes": {
			spec:      trainertesting.MakeRuntimeSpec().NumNodes(2).JAX().ReplicatedJob(trainertesting.TrainerJob("j")).Obj(),
			job:       trainertesting.MakeTrainJob("job", "default").Image("img").Obj(),
			wantEnv:   []corev1.EnvVar{{Name: EnvNumProcesses, Value: "2"}, plugin.CompletionIndexEnv(EnvProcessID), {Name: EnvCoordinatorAddress, Value: "job-node-0-0.job:29500"}},
			wantPorts: port,
		},
		// Trainer v2.3 sets them only for a TrainJob with spec.trainer.
		"no spec.trainer: no variables, no port": {
			spec: trainertesting.MakeRuntimeSpec().NumNodes(2).JAX().ReplicatedJob(trainertesting.TrainerJob("j")).Obj(),
			job:  trainertesting.MakeTrainJob("job", "default").Obj(),
		},
		"no trainer step": {
			spec: trainertesting.MakeRuntimeSpec().JAX().ReplicatedJob(trainertesting.ReplicatedJob("node", "", trainertesting.MakeContainer("node", "j").Obj())).Obj(),
			job:  trainertesting.MakeTrainJob("job", "default").Image("img").Obj(), wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info, err := plugin.NewInfo(tc.job, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			err = JAX.EnforceMLPolicy(info, tc.job)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				if !plugin.IsBuildError(err) {
					t.Errorf("%v is not a BuildError", err)
				}
				return
			}
			node := info.TrainerPodSet().FindContainer(trainer.TrainerNodeName)
			if diff := cmp.Diff(tc.wantEnv, node.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPorts, node.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateReservedEnv(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().JAX().ReplicatedJob(trainertesting.TrainerJob("j")).Obj()
	job := trainertesting.MakeTrainJob("job", "default").Env("OK", "1").Env(EnvProcessID, "0").Obj()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	errs := JAX.Validate(info, nil, job)
	if len(errs) != 1 || errs[0].Field != "spec.trainer.env[1]" {
		t.Errorf("errors = %v", errs)
	}
}
