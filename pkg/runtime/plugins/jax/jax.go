// Package jax is the ML policy for JAX: one JAX process per pod, with the
// variables jax.distributed.initialize() needs.
package jax

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "JAX"

// Environment the plugin sets on the trainer node container.
const (
	EnvNumProcesses       = "JAX_NUM_PROCESSES"
	EnvProcessID          = "JAX_PROCESS_ID"
	EnvCoordinatorAddress = "JAX_COORDINATOR_ADDRESS"
)

// reservedEnvNames are set by the plugin; a TrainJob may not set them.
var reservedEnvNames = sets.New(EnvNumProcesses, EnvProcessID, EnvCoordinatorAddress)

// JAX implements the validation and ML-policy extension points.
type JAX struct{}

var (
	_ plugin.EnforceMLPolicyPlugin  = JAX{}
	_ plugin.CustomValidationPlugin = JAX{}
)

// Name implements plugin.Plugin.
func (JAX) Name() string { return Name }

func active(info *plugin.Info) bool {
	return info != nil && info.MLPolicy != nil && info.MLPolicy.JAX != nil
}

// Validate rejects reserved env names in the TrainJob. This is Gantry's
// own check: Trainer v2.3's JAX plugin validates nothing, and its JobSet
// builder applies spec.trainer.env after the plugin's JAX_* variables, so
// there a user's JAX_PROCESS_ID silently replaces the derived one (the
// torch, MPI and XGBoost plugins refuse their reserved names, as Gantry's do).
func (JAX) Validate(info *plugin.Info, _, newJob *trainer.TrainJob) field.ErrorList {
	if !active(info) {
		return nil
	}
	return plugin.ReservedEnvErrors(newJob, reservedEnvNames, "JAX")
}

// EnforceMLPolicy sets the process count, the process id (the pod's
// completion index) and the coordinator (pod 0) on the trainer node container.
func (JAX) EnforceMLPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	if !active(info) {
		return nil
	}
	plugin.ApplyTrainerCount(info, trainJob)
	if trainJob.Spec.Trainer == nil {
		// Trainer v2.3 sets the JAX variables and port only for a TrainJob
		// with spec.trainer.
		return nil
	}
	ps, node, err := info.TrainerNode("jax")
	if err != nil {
		return err
	}
	plugin.UpsertEnv(&node.Env,
		corev1.EnvVar{Name: EnvNumProcesses, Value: strconv.Itoa(int(ps.Count))},
		plugin.CompletionIndexEnv(EnvProcessID),
		corev1.EnvVar{Name: EnvCoordinatorAddress, Value: fmt.Sprintf("%s:%d", info.PodHostname(trainJob.Name, ps.Name, 0, 0), trainer.ContainerTrainerPort)},
	)
	plugin.UpsertPorts(&node.Ports, corev1.ContainerPort{ContainerPort: trainer.ContainerTrainerPort})
	return nil
}
