package plugin

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// TrainerNode returns the trainer PodSet and its node container, which every
// ML policy configures, or the BuildError that names what the runtime's
// template lacks. policy names the policy in the message ("torch").
func (i *Info) TrainerNode(policy string) (*PodSet, *Container, error) {
	ps := i.TrainerPodSet()
	if ps == nil {
		return nil, nil, NewBuildError("the %s policy needs a replicated job labelled %s=%s", policy, trainer.LabelTrainJobAncestor, trainer.AncestorTrainer)
	}
	node := ps.FindContainer(trainer.TrainerNodeName)
	if node == nil {
		return nil, nil, NewBuildError("replicated job %q has no %q container", ps.Name, trainer.TrainerNodeName)
	}
	return ps, node, nil
}

// ReservedEnvErrors forbids, one error per entry, trainer env variables the
// policy sets itself. Trainer v2.3 refuses them too for torch, MPI and
// XGBoost; for JAX it lets the user's value replace the derived one.
// runtime names the policy in the message ("JAX").
func ReservedEnvErrors(job *trainer.TrainJob, reserved sets.Set[string], runtime string) field.ErrorList {
	if job == nil || job.Spec.Trainer == nil {
		return nil
	}
	var errs field.ErrorList
	for i, e := range job.Spec.Trainer.Env {
		if reserved.Has(e.Name) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "trainer", "env").Index(i),
				fmt.Sprintf("%s is set by the %s runtime", e.Name, runtime)))
		}
	}
	return errs
}
