// Package torch is the ML policy for PyTorch: it gives the trainer node
// container the PET_* variables torchrun reads, so the training command can
// be a bare `torchrun train.py`.
package torch

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/framework"
)

// Name identifies the plugin.
const Name = "Torch"

// ReservedEnvNames are set by the plugin; a TrainJob may not set them.
var ReservedEnvNames = sets.New(
	trainer.TorchEnvNumNodes, trainer.TorchEnvNumProcPerNode, trainer.TorchEnvNodeRank,
	trainer.TorchEnvMasterAddr, trainer.TorchEnvMasterPort,
)

// Torch implements the validation and ML-policy extension points.
type Torch struct{}

var (
	_ framework.EnforceMLPolicyPlugin  = Torch{}
	_ framework.CustomValidationPlugin = Torch{}
)

// Name implements framework.Plugin.
func (Torch) Name() string { return Name }

func active(info *framework.Info) bool {
	return info != nil && info.MLPolicy != nil && info.MLPolicy.Torch != nil
}

// Validate rejects reserved env names in the TrainJob and envInjection
// targets that name jobs or containers the runtime does not have.
func (Torch) Validate(info *framework.Info, _, newJob *trainer.TrainJob) field.ErrorList {
	if !active(info) {
		return nil
	}
	var errs field.ErrorList
	if t := newJob.Spec.Trainer; t != nil {
		var reserved []string
		for _, e := range t.Env {
			if ReservedEnvNames.Has(e.Name) {
				reserved = append(reserved, e.Name)
			}
		}
		if len(reserved) > 0 {
			slices.Sort(reserved)
			errs = append(errs, field.Invalid(field.NewPath("spec", "trainer", "env"), reserved,
				fmt.Sprintf("must not set the torchrun variables %v, the runtime sets them", sets.List(ReservedEnvNames))))
		}
	}
	if inj := info.MLPolicy.Torch.EnvInjection; inj != nil {
		path := field.NewPath("spec", "mlPolicy", "torch", "envInjection", "targets")
		for _, target := range inj.Targets {
			ps := info.FindPodSetByName(target.JobName)
			if ps == nil {
				errs = append(errs, field.NotFound(path.Key(target.JobName), target.JobName))
				continue
			}
			for _, name := range target.ContainerNames {
				if ps.FindContainer(name) == nil && ps.FindInitContainer(name) == nil {
					errs = append(errs, field.NotFound(path.Key(target.JobName).Child("containerNames"), name))
				}
			}
		}
	}
	return errs
}

// EnforceMLPolicy sets the node count, the PET_* variables and the
// rendezvous port on the trainer node container (and on envInjection
// targets).
func (Torch) EnforceMLPolicy(info *framework.Info, trainJob *trainer.TrainJob) error {
	if !active(info) {
		return nil
	}
	framework.ApplyTrainerCountAndEnv(info, trainJob)
	ps, node, err := info.TrainerNode("torch")
	if err != nil {
		return err
	}
	env := []corev1.EnvVar{
		{Name: trainer.TorchEnvNumNodes, Value: strconv.Itoa(int(ps.Count))},
		{Name: trainer.TorchEnvNumProcPerNode, Value: numProcPerNode(info.MLPolicy.Torch, trainJob, node.Resources)},
		framework.CompletionIndexEnv(trainer.TorchEnvNodeRank),
		{Name: trainer.TorchEnvMasterAddr, Value: fmt.Sprintf("%s-%s-0-0.%s", trainJob.Name, ps.Name, info.Subdomain(trainJob.Name))},
		{Name: trainer.TorchEnvMasterPort, Value: strconv.Itoa(int(trainer.ContainerTrainerPort))},
	}
	framework.UpsertEnv(&node.Env, env...)
	framework.UpsertPorts(&node.Ports, corev1.ContainerPort{ContainerPort: trainer.ContainerTrainerPort})

	if inj := info.MLPolicy.Torch.EnvInjection; inj != nil {
		for _, target := range inj.Targets {
			tps := info.FindPodSetByName(target.JobName)
			if tps == nil {
				continue
			}
			for _, name := range target.ContainerNames {
				c := tps.FindContainer(name)
				if c == nil {
					c = tps.FindInitContainer(name)
				}
				if c != nil {
					framework.UpsertEnv(&c.Env, env...)
				}
			}
		}
	}
	return nil
}

// numProcPerNode resolves PET_NPROC_PER_NODE. The TrainJob's numProcPerNode
// wins; otherwise the runtime's (default auto). "auto" stays auto when the
// node has GPUs (torchrun counts them) but becomes the CPU count otherwise,
// because torchrun's auto would count the host's CPUs rather than the
// container's share; "cpu" is always the CPU count (1 when unknown).
func numProcPerNode(policy *trainer.TorchMLPolicySource, trainJob *trainer.TrainJob, res corev1.ResourceRequirements) string {
	if t := trainJob.Spec.Trainer; t != nil && t.NumProcPerNode != nil {
		return strconv.Itoa(int(*t.NumProcPerNode))
	}
	value := intstr.FromString("auto")
	if policy.NumProcPerNode != nil {
		value = *policy.NumProcPerNode
	}
	if value.Type == intstr.Int {
		return strconv.Itoa(int(value.IntVal))
	}
	switch value.StrVal {
	case "auto":
		if framework.GPUCount(res) > 0 {
			return "auto"
		}
		if cpus, ok := framework.CPUCount(res); ok {
			return strconv.FormatInt(cpus, 10)
		}
		return "auto"
	case "cpu":
		cpus, ok := framework.CPUCount(res)
		if !ok {
			cpus = 1
		}
		return strconv.FormatInt(cpus, 10)
	}
	return value.StrVal
}
