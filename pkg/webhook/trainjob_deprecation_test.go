package webhook

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// trainerDeprecatedRuntimeWarning is Trainer v2.3's warning, word for word
// (pkg/runtime/core/clustertrainingruntime.go:111-115 and its test,
// pkg/webhooks/trainjob_webhook_test.go:370), for a TrainJob that
// references the ClusterTrainingRuntime "deprecated-torch".
const trainerDeprecatedRuntimeWarning = `Referenced ClusterTrainingRuntime "deprecated-torch" is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy`

// TestTrainJobReferencingADeprecatedRuntimeIsWarned: as Trainer v2.3, a
// TrainJob whose ClusterTrainingRuntime is labelled
// trainer.kubeflow.org/support: deprecated is admitted with Trainer's
// warning, on create and on update, and alongside any error; a
// TrainingRuntime so labelled, another value of the label, or no label
// draw none (Trainer's TrainingRuntime.ValidateObjects has no such
// warning).
func TestTrainJobReferencingADeprecatedRuntimeIsWarned(t *testing.T) {
	torch := decodeFile[trainer.ClusterTrainingRuntime](t, "config/samples/trainer_v1alpha1_clustertrainingruntime.yaml")
	labelled := func(name, value string) *trainer.ClusterTrainingRuntime {
		rt := torch.DeepCopy()
		rt.ObjectMeta = metav1.ObjectMeta{Name: name, Labels: map[string]string{"trainer.kubeflow.org/support": value}}
		return rt
	}
	mpi := decodeFile[trainer.TrainingRuntime](t, "config/samples/trainer_v1alpha1_trainingruntime.yaml")
	mpi.ObjectMeta = metav1.ObjectMeta{Name: "deprecated-mpi", Namespace: testNamespace,
		Labels: map[string]string{"trainer.kubeflow.org/support": "deprecated"}}
	v := trainJobValidator(t, labelled("deprecated-torch", "deprecated"), labelled("nearly-deprecated", "deprecated-extra"), &mpi)

	tests := []struct {
		name     string
		mutate   func(*trainer.TrainJob)
		warnings admission.Warnings
		err      string
	}{
		{name: "deprecated ClusterTrainingRuntime", mutate: func(j *trainer.TrainJob) { j.Spec.RuntimeRef.Name = "deprecated-torch" },
			warnings: admission.Warnings{trainerDeprecatedRuntimeWarning}},
		{name: "deprecated ClusterTrainingRuntime and an invalid job", mutate: func(j *trainer.TrainJob) {
			j.Spec.RuntimeRef.Name = "deprecated-torch"
			j.Spec.Trainer.NumNodes = ptr.To[int32](0)
		}, warnings: admission.Warnings{trainerDeprecatedRuntimeWarning}, err: "spec.trainer.numNodes"},
		{name: "another value of the label", mutate: func(j *trainer.TrainJob) { j.Spec.RuntimeRef.Name = "nearly-deprecated" }},
		{name: "no label", mutate: func(*trainer.TrainJob) {}},
		{name: "deprecated TrainingRuntime", mutate: func(j *trainer.TrainJob) {
			j.Spec.RuntimeRef = trainer.RuntimeRef{Name: "deprecated-mpi", APIGroup: ptr.To(trainer.GroupVersion.Group), Kind: ptr.To(trainer.TrainingRuntimeKind)}
			j.Spec.Trainer = nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := sampleTrainJob(t)
			tc.mutate(job)
			warnings, err := v.ValidateCreate(context.Background(), job)
			checkAdmission(t, err, tc.err)
			if !slices.Equal(warnings, tc.warnings) {
				t.Errorf("create: warnings %q, want %q", warnings, tc.warnings)
			}

			updated := job.DeepCopy()
			updated.Labels = map[string]string{"team": "a"}
			warnings, err = v.ValidateUpdate(context.Background(), job, updated)
			checkAdmission(t, err, tc.err)
			if !slices.Equal(warnings, tc.warnings) {
				t.Errorf("update: warnings %q, want %q", warnings, tc.warnings)
			}
		})
	}
}
