package runtime

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

var (
	trainerPath        = field.NewPath("spec", "trainer")
	runtimePatchesPath = field.NewPath("spec", "runtimePatches")
)

// ValidateTrainJob checks what a TrainJob says on its own, whatever its
// runtime: counts the runtime plugins would otherwise silently raise to 1
// (numNodes: 0 would render a one-node JobSet), and runtime patch managers
// that are not domain-prefixed paths. The admission webhook rejects them;
// NewObjects refuses to build them, so that without the webhook (not
// installed, or the object older than it) the TrainJob says why nothing
// runs instead of running something else.
func ValidateTrainJob(job *trainer.TrainJob) field.ErrorList {
	var errs field.ErrorList
	if t := job.Spec.Trainer; t != nil {
		if t.NumNodes != nil && *t.NumNodes < 1 {
			errs = append(errs, field.Invalid(trainerPath.Child("numNodes"), *t.NumNodes, "must be greater than or equal to 1"))
		}
		if t.NumProcPerNode != nil && *t.NumProcPerNode < 1 {
			errs = append(errs, field.Invalid(trainerPath.Child("numProcPerNode"), *t.NumProcPerNode, "must be greater than or equal to 1"))
		}
	}
	for i, p := range job.Spec.RuntimePatches {
		errs = append(errs, validation.IsDomainPrefixedPath(runtimePatchesPath.Index(i).Child("manager"), p.Manager)...)
	}
	return errs
}
