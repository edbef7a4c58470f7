package runtime

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// initializerJob is an initializer step whose container mounts the named
// volumes at /workspace; ancestor may be empty (a runtime written before
// the ancestor label).
func initializerJob(name, ancestor string, mounts ...string) jobsetv1alpha2.ReplicatedJob {
	c := trainertesting.MakeContainer(name, name+":v1").Obj()
	for _, m := range mounts {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: m, MountPath: "/workspace"})
	}
	return trainertesting.ReplicatedJob(name, ancestor, c)
}

// Trainer v2.3 admits a TrainJob that configures a dataset or model
// initializer only when the runtime's initializer container mounts the
// volume named "initializer" (the volume the initializers fill and the
// trainer reads): without it the download lands nowhere the trainer sees.
func TestValidateInitializerMounts(t *testing.T) {
	const (
		ds    = trainer.DatasetInitializerName
		model = trainer.ModelInitializerName
	)
	withMounts := func(dsMounts, modelMounts []string) *trainer.TrainingRuntimeSpec {
		return trainertesting.MakeRuntimeSpec().Torch(nil).
			ReplicatedJob(initializerJob(ds, trainer.AncestorDatasetInitializer, dsMounts...),
				initializerJob(model, trainer.AncestorModelInitializer, modelMounts...),
				trainertesting.TrainerJob("train:v1")).Obj()
	}
	both := trainertesting.MakeTrainJob("j", "default").DatasetInitializer("hf://org/data", "").ModelInitializer("hf://org/model", "")
	mountPatch := func(job string) *trainer.TrainingRuntimeSpecPatch {
		return &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{
			ReplicatedJobs: []trainer.ReplicatedJobPatch{{Name: job, Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
				Template: &trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{{
					Name: job, VolumeMounts: []corev1.VolumeMount{{Name: "initializer", MountPath: "/workspace"}},
				}}}},
			}}}},
		}}}
	}
	cases := map[string]struct {
		job  *trainer.TrainJob
		spec *trainer.TrainingRuntimeSpec
		n    int      // errors wanted
		want []string // substrings of their messages
	}{
		"both mounted": {job: both.Obj(), spec: withMounts([]string{"initializer"}, []string{"other", "initializer"})},
		"dataset container without the mount": {
			job: both.Obj(), spec: withMounts([]string{"data"}, []string{"initializer"}), n: 1,
			want: []string{`spec.runtimeRef: Invalid value:`, `the runtime's dataset-initializer job must mount the volume "initializer" in its dataset-initializer container`},
		},
		"model container without the mount": {
			job: both.Obj(), spec: withMounts([]string{"initializer"}, nil), n: 1,
			want: []string{`the runtime's model-initializer job must mount the volume "initializer" in its model-initializer container`},
		},
		"neither mounted": {
			job: both.Obj(), spec: withMounts(nil, nil), n: 2,
			want: []string{`dataset-initializer container`, `model-initializer container`},
		},
		"only the model configured": {
			job:  trainertesting.MakeTrainJob("j", "default").ModelInitializer("hf://org/model", "").Obj(),
			spec: withMounts(nil, []string{"initializer"}),
		},
		"no initializer configured": {job: trainertesting.MakeTrainJob("j", "default").Obj(), spec: withMounts(nil, nil)},
		"mounted by a runtime patch": {
			job: both.Clone().RuntimePatch("example.com/user", mountPatch(ds)).Obj(), spec: withMounts(nil, []string{"initializer"}),
		},
		"runtime written before the ancestor label": {
			job: both.Obj(),
			spec: trainertesting.MakeRuntimeSpec().Torch(nil).
				ReplicatedJob(initializerJob(ds, ""), initializerJob(model, "", "initializer"), trainertesting.TrainerJob("train:v1")).Obj(),
			n: 1, want: []string{`dataset-initializer container`},
		},
		// A missing step or container is the JobSet plugin's error, not a
		// second one here.
		"runtime without initializer jobs": {
			job: both.Obj(), spec: trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("train:v1")).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := ValidateInitializerMounts(tc.job, tc.spec)
			if len(errs) != tc.n {
				t.Fatalf("errors = %v, want %d", errs, tc.n)
			}
			got := errs.ToAggregate()
			for _, w := range tc.want {
				if got == nil || !strings.Contains(got.Error(), w) {
					t.Errorf("errors = %v, want one containing %q", got, w)
				}
			}
		})
	}
}
