package torch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "Torch"

// reservedEnvNames are set by the plugin; a TrainJob may not set them.
var reservedEnvNames = sets.New(
	trainer.TorchEnvNumNodes, trainer.TorchEnvNumProcPerNode, trainer.TorchEnvNodeRank,
	trainer.TorchEnvMasterAddr, trainer.TorchEnvMasterPort,
)

// ElasticGateName is the manager's feature gate for elastic PyTorch
// (alpha, off by default).
const ElasticGateName = "TrainJobElasticPyTorch"

// Torch implements the validation and ML-policy extension points.
type Torch struct {
	// ClusterDomain is the cluster DNS suffix of the elastic rendezvous
	// endpoint; empty means plugin.DefaultClusterDomain.
	ClusterDomain string
}

var (
	_ plugin.EnforceMLPolicyPlugin  = Torch{}
	_ plugin.CustomValidationPlugin = Torch{}
)

// Name implements plugin.Plugin.
func (Torch) Name() string { return Name }

func active(info *plugin.Info) bool {
	return info != nil && info.MLPolicy != nil && info.MLPolicy.Torch != nil
}

// Validate rejects reserved env names in the TrainJob and envInjection
// targets that name jobs or containers the runtime does not have.
func (t Torch) Validate(info *plugin.Info, _, newJob *trainer.TrainJob) field.ErrorList {
	if !active(info) {
		return nil
	}
	errs := t.validateElastic(info, newJob)
	if tr := newJob.Spec.Trainer; tr != nil {
		var reserved []string
		for _, e := range tr.Env {
			if reservedEnvNames.Has(e.Name) {
				reserved = append(reserved, e.Name)
			}
		}
		if len(reserved) > 0 {
			slices.Sort(reserved)
			errs = append(errs, field.Invalid(field.NewPath("spec", "trainer", "env"), reserved,
				fmt.Sprintf("must not set the torchrun variables %v, the runtime sets them", sets.List(reservedEnvNames))))
		}
	}
	if isTorchTune(newJob) {
		errs = append(errs, validateTorchTune(info, newJob)...)
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
func (t Torch) EnforceMLPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	if !active(info) {
		return nil
	}
	plugin.ApplyTrainerCountAndEnv(info, trainJob)
	ps, node, err := info.TrainerNode("torch")
	if err != nil {
		return err
	}
	nproc := numProcPerNode(info.MLPolicy.Torch, trainJob, node.Resources)
	pet := []corev1.EnvVar{
		{Name: trainer.TorchEnvNumNodes, Value: strconv.Itoa(int(ps.Count))},
		{Name: trainer.TorchEnvNumProcPerNode, Value: nproc},
		plugin.CompletionIndexEnv(trainer.TorchEnvNodeRank),
	}
	master := []corev1.EnvVar{
		{Name: trainer.TorchEnvMasterAddr, Value: info.PodHostname(trainJob.Name, ps.Name, 0, 0)},
		{Name: trainer.TorchEnvMasterPort, Value: strconv.Itoa(int(trainer.ContainerTrainerPort))},
	}
	env := append(slices.Clone(pet), master...)
	if ElasticPolicy(info.MLPolicy) != nil {
		env = t.elasticEnv(info, trainJob, ps, nproc)
	}
	// Trainer v2.3 gives the trainer node container the PET_* variables and
	// the port only for a TrainJob with spec.trainer; envInjection targets
	// get them either way.
	switch {
	case trainJob.Spec.Trainer == nil:
	case isTorchTune(trainJob):
		// torchtune takes its rendezvous from the command, not PET_MASTER_*.
		plugin.UpsertEnv(&node.Env, pet...)
		info.TrainerCommand = torchTuneCommand(info, trainJob, ps, nproc, resourcesPerNode(trainJob, node.Resources))
		plugin.UpsertPorts(&node.Ports, corev1.ContainerPort{ContainerPort: trainer.ContainerTrainerPort})
	default:
		plugin.UpsertEnv(&node.Env, env...)
		plugin.UpsertPorts(&node.Ports, corev1.ContainerPort{ContainerPort: trainer.ContainerTrainerPort})
	}

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
					plugin.UpsertEnv(&c.Env, env...)
				}
			}
		}
	}
	return nil
}

// numProcPerNode resolves PET_NPROC_PER_NODE the way Trainer v2.3 does.
// The TrainJob's numProcPerNode wins. Otherwise the value is "auto", which
// stays auto when the node has GPUs (torchrun counts them) and becomes the
// node's CPU count otherwise, at least 1: torchrun's own auto would start
// one process per host CPU, not per CPU the container was given.
//
// The runtime's legacy numProcPerNode (Trainer v2.0/v2.1; v2.3 has none)
// keeps its v2.1 meaning: an integer as is, "cpu" the CPU count even next to
// GPUs, "gpu" passed through to torchrun, "auto" as above.
func numProcPerNode(policy *trainer.TorchMLPolicySource, trainJob *trainer.TrainJob, node corev1.ResourceRequirements) string {
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
	res := resourcesPerNode(trainJob, node)
	switch value.StrVal {
	case "auto":
		if hasGPU(res) {
			return "auto"
		}
		return strconv.FormatInt(cpusPerNode(res), 10)
	case "cpu":
		return strconv.FormatInt(cpusPerNode(res), 10)
	}
	return value.StrVal
}

// resourcesPerNode is what the process count is sized by: the TrainJob's
// resourcesPerNode exactly as written when it is set (even empty, and not
// combined with the runtime's resources), otherwise the runtime's node
// container.
func resourcesPerNode(trainJob *trainer.TrainJob, node corev1.ResourceRequirements) corev1.ResourceRequirements {
	if t := trainJob.Spec.Trainer; t != nil && t.ResourcesPerNode != nil {
		return *t.ResourcesPerNode
	}
	return node
}

// cpusPerNode is the CPU request, or the limit when no (or a zero) request
// is set, in whole CPUs rounded up, and at least 1. The request comes first
// because it is what the scheduler reserved for the pod; a larger limit is
// only burst capacity.
func cpusPerNode(res corev1.ResourceRequirements) int64 {
	q := res.Requests[corev1.ResourceCPU]
	if q.IsZero() {
		q = res.Limits[corev1.ResourceCPU]
	}
	return max(1, q.Value())
}

// hasGPU reports a positive quantity of any resource whose name contains
// "gpu" (nvidia.com/gpu, amd.com/gpu, ...), in requests or in limits.
// Upstream takes the first such name in map order; asking whether any is
// positive gives the same answer for one GPU resource and a stable one for
// several.
func hasGPU(res corev1.ResourceRequirements) bool {
	for _, list := range []corev1.ResourceList{res.Requests, res.Limits} {
		for name, q := range list {
			if strings.Contains(strings.ToLower(string(name)), "gpu") && q.Sign() > 0 {
				return true
			}
		}
	}
	return false
}
