package torch

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Elastic PyTorch (mlPolicy.torch.elasticPolicy) is Gantry's addition,
// after the draft KEP-2903 of kubeflow/trainer: torchrun runs with a c10d
// rendezvous hosted by the first node and --nnodes=MIN:MAX, so nodes may
// join or leave while it trains, and a TrainJob's spec.trainer.numNodes may
// change between the bounds while the job runs (the JobSet's parallelism
// and completions follow, in place).

// rdzvBackend is torchrun's rendezvous backend in elastic mode: c10d needs
// no etcd; the node whose hostname matches the endpoint hosts the store.
const rdzvBackend = "c10d"

// elasticReservedEnvNames are set in elastic mode; a TrainJob may not set them.
var elasticReservedEnvNames = sets.New(
	trainer.TorchEnvRdzvBackend, trainer.TorchEnvRdzvEndpoint, trainer.TorchEnvRdzvID, trainer.TorchEnvMaxRestarts,
)

// ElasticPolicy returns the runtime's elastic policy, or nil.
func ElasticPolicy(mlPolicy *trainer.MLPolicy) *trainer.TorchElasticPolicy {
	if mlPolicy == nil || mlPolicy.Torch == nil {
		return nil
	}
	return mlPolicy.Torch.ElasticPolicy
}

// NumNodes is the node count a TrainJob asks of its runtime: the job's
// numNodes, else the runtime's, else 1.
func NumNodes(trainJob *trainer.TrainJob, mlPolicy *trainer.MLPolicy) int32 {
	if t := trainJob.Spec.Trainer; t != nil && t.NumNodes != nil {
		return *t.NumNodes
	}
	if mlPolicy != nil && mlPolicy.NumNodes != nil {
		return *mlPolicy.NumNodes
	}
	return 1
}

// validateElastic checks a TrainJob on an elastic runtime: the node count
// is within the bounds, the job is no torchtune job (its recipes take their
// rendezvous from the command) and sets none of the rendezvous variables.
// The feature gate is the admission webhook's to check (runtime.Validate):
// a job admitted while it was on keeps running when it is turned off.
func (t Torch) validateElastic(info *plugin.Info, newJob *trainer.TrainJob) field.ErrorList {
	ep := ElasticPolicy(info.MLPolicy)
	if ep == nil {
		return nil
	}
	runtimeRef := field.NewPath("spec", "runtimeRef")
	var errs field.ErrorList
	if n := NumNodes(newJob, info.MLPolicy); n < ep.MinNodes || n > ep.MaxNodes {
		errs = append(errs, field.Invalid(field.NewPath("spec", "trainer", "numNodes"), n, fmt.Sprintf(
			"must be between the runtime's elasticPolicy.minNodes (%d) and maxNodes (%d)", ep.MinNodes, ep.MaxNodes)))
	}
	if isTorchTune(newJob) {
		errs = append(errs, field.Forbidden(runtimeRef, "torchtune recipes cannot run on an elastic runtime: they take their rendezvous from the command"))
	}
	if tr := newJob.Spec.Trainer; tr != nil {
		for _, e := range tr.Env {
			if elasticReservedEnvNames.Has(e.Name) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "trainer", "env"), e.Name,
					fmt.Sprintf("must not set the elastic rendezvous variables %v, the runtime sets them", sets.List(elasticReservedEnvNames))))
			}
		}
	}
	return errs
}

// elasticEnv is the torchrun environment of an elastic job: the node range
// instead of a count, the c10d rendezvous on the first pod (by its fully
// qualified name, which is how torchrun recognises the pod that hosts the
// store), the TrainJob's UID as the rendezvous ID, and the restart budget.
// PET_NODE_RANK is left out: the rendezvous assigns ranks.
func (t Torch) elasticEnv(info *plugin.Info, trainJob *trainer.TrainJob, ps *plugin.PodSet, nproc string) []corev1.EnvVar {
	ep := ElasticPolicy(info.MLPolicy)
	host := fmt.Sprintf("%s.%s.svc.%s", info.PodHostname(trainJob.Name, ps.Name, 0, 0), trainJob.Namespace, plugin.ClusterDomain(t.ClusterDomain))
	port := strconv.Itoa(int(trainer.ContainerTrainerPort))
	env := []corev1.EnvVar{
		{Name: trainer.TorchEnvNumNodes, Value: fmt.Sprintf("%d:%d", ep.MinNodes, ep.MaxNodes)},
		{Name: trainer.TorchEnvNumProcPerNode, Value: nproc},
		{Name: trainer.TorchEnvRdzvBackend, Value: rdzvBackend},
		{Name: trainer.TorchEnvRdzvEndpoint, Value: host + ":" + port},
		{Name: trainer.TorchEnvRdzvID, Value: string(trainJob.UID)},
	}
	if ep.MaxRestarts != nil {
		env = append(env, corev1.EnvVar{Name: trainer.TorchEnvMaxRestarts, Value: strconv.Itoa(int(ptr.Deref(ep.MaxRestarts, 0)))})
	}
	return append(env,
		corev1.EnvVar{Name: trainer.TorchEnvMasterAddr, Value: info.PodHostname(trainJob.Name, ps.Name, 0, 0)},
		corev1.EnvVar{Name: trainer.TorchEnvMasterPort, Value: port},
	)
}
