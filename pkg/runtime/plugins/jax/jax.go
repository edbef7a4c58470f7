package jax

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

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

// JAX sets the process count, the process id (the pod's completion index)
// and the coordinator (pod 0) on the trainer node container.
//
// Refusing the reserved names is Gantry's own check: Trainer v2.3's JAX
// plugin validates nothing, and its JobSet builder applies spec.trainer.env
// after the plugin's JAX_* variables, so there a user's JAX_PROCESS_ID
// silently replaces the derived one (the torch, MPI and XGBoost plugins
// refuse their reserved names, as Gantry's do).
var JAX = plugin.EnvPolicy{
	PolicyName: Name,
	Framework:  "jax",
	Reserved:   sets.New(EnvNumProcesses, EnvProcessID, EnvCoordinatorAddress),
	Active:     func(p *trainer.MLPolicy) bool { return p.JAX != nil },
	Env: func(info *plugin.Info, trainJob *trainer.TrainJob, ps *plugin.PodSet) []corev1.EnvVar {
		return []corev1.EnvVar{
			{Name: EnvNumProcesses, Value: strconv.Itoa(int(ps.Count))},
			plugin.CompletionIndexEnv(EnvProcessID),
			{Name: EnvCoordinatorAddress, Value: fmt.Sprintf("%s:%d", info.PodHostname(trainJob.Name, ps.Name, 0, 0), trainer.ContainerTrainerPort)},
		}
	},
}
