package plugin

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// EnvPolicy is an ML policy whose whole work is environment on the trainer
// node container: it refuses a TrainJob that sets one of the variables it
// owns, and, for a TrainJob with spec.trainer (Trainer v2.3 sets the
// variables and port only then), sets them and the trainer port. The JAX
// and XGBoost plugins are EnvPolicies.
type EnvPolicy struct {
	// PolicyName is the plugin's name, also used in validation messages.
	PolicyName string
	// Framework names the policy in build errors ("jax").
	Framework string
	// Reserved are the variables Env sets; a TrainJob may not set them.
	Reserved sets.Set[string]
	// Active reports whether the runtime's policy selects this plugin.
	Active func(*trainer.MLPolicy) bool
	// Env is what the trainer node gets, for its PodSet ps.
	Env func(info *Info, trainJob *trainer.TrainJob, ps *PodSet) []corev1.EnvVar
}

var (
	_ EnforceMLPolicyPlugin  = EnvPolicy{}
	_ CustomValidationPlugin = EnvPolicy{}
)

// Name implements Plugin.
func (p EnvPolicy) Name() string { return p.PolicyName }

func (p EnvPolicy) active(info *Info) bool {
	return info != nil && info.MLPolicy != nil && p.Active(info.MLPolicy)
}

// Validate rejects the reserved env names in the TrainJob.
func (p EnvPolicy) Validate(info *Info, _, newJob *trainer.TrainJob) field.ErrorList {
	if !p.active(info) {
		return nil
	}
	return ReservedEnvErrors(newJob, p.Reserved, p.PolicyName)
}

// EnforceMLPolicy sets the trainer's node count and, for a TrainJob with
// spec.trainer, Env and the trainer port on the trainer node container.
func (p EnvPolicy) EnforceMLPolicy(info *Info, trainJob *trainer.TrainJob) error {
	if !p.active(info) {
		return nil
	}
	ApplyTrainerCount(info, trainJob)
	if trainJob.Spec.Trainer == nil {
		return nil
	}
	ps, node, err := info.TrainerNode(p.Framework)
	if err != nil {
		return err
	}
	UpsertEnv(&node.Env, p.Env(info, trainJob, ps)...)
	UpsertPorts(&node.Ports, corev1.ContainerPort{ContainerPort: trainer.ContainerTrainerPort})
	return nil
}
