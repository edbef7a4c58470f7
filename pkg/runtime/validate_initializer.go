package runtime

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// InitializerVolumeName is the volume the dataset and model initializers
// download into and the trainer reads from (Trainer v2.3's name; the
// shipped TorchTune runtimes claim it through volumeClaimPolicies).
const InitializerVolumeName = "initializer"

// ValidateInitializerMounts is Trainer v2.3's admission rule for
// initializers: a TrainJob that configures spec.initializer.dataset (or
// .model) needs the runtime's dataset (model) initializer container to
// mount the volume named "initializer", since a download that lands
// elsewhere never reaches the trainer. The runtime is read as the job
// would run it, runtime patches merged, so a patch may add the mount.
//
// A runtime without the step or its container is not reported here: the
// JobSet plugin's validation already says so. Neither is a runtime the
// patches cannot be merged into (the framework's validation reports that).
func ValidateInitializerMounts(job *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) field.ErrorList {
	if job == nil || spec == nil || job.Spec.Initializer == nil {
		return nil
	}
	init := job.Spec.Initializer
	if init.Dataset == nil && init.Model == nil {
		return nil
	}
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		return nil
	}
	var errs field.ErrorList
	check := func(step string) {
		ps := info.FindPodSetByAncestor(step)
		if ps == nil {
			// Runtimes written before the ancestor label name the job after the step.
			ps = info.FindPodSetByName(step)
		}
		if ps == nil {
			return
		}
		// The step's container has the step's name (dataset-initializer,
		// model-initializer), as the runtime webhook requires.
		c := ps.FindContainer(step)
		if c == nil {
			return
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == InitializerVolumeName }) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "runtimeRef"), job.Spec.RuntimeRef, fmt.Sprintf(
				"the runtime's %s job must mount the volume %q in its %s container, where the %s is downloaded for the trainer",
				ps.Name, InitializerVolumeName, c.Name, initializerWhat(step))))
		}
	}
	if init.Dataset != nil {
		check(trainer.AncestorDatasetInitializer)
	}
	if init.Model != nil {
		check(trainer.AncestorModelInitializer)
	}
	return errs
}

func initializerWhat(step string) string {
	if step == trainer.AncestorModelInitializer {
		return "model"
	}
	return "dataset"
}
