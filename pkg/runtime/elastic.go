package runtime

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/torch"
)

// KueueQueueNameLabel marks a TrainJob that Kueue admits.
const KueueQueueNameLabel = "kueue.x-k8s.io/queue-name"

// validateNumNodesUpdate is the rule for changing spec.trainer.numNodes,
// the one field of spec.trainer that may change (Trainer v2.3 makes the
// whole of spec.trainer immutable). It may change only for a job on an
// elastic runtime with the gate on, before the job finishes, and, for a
// job Kueue admits, only while it is suspended: Kueue admitted the job
// with its node count, and a running job of another size would no longer
// match its Workload. The bounds are checked by the torch plugin.
func (r *Runtime) validateNumNodesUpdate(oldJob, newJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) field.ErrorList {
	if oldJob == nil || oldJob.Spec.Trainer == nil || newJob.Spec.Trainer == nil {
		return nil
	}
	before, after := oldJob.Spec.Trainer.NumNodes, newJob.Spec.Trainer.NumNodes
	if ptr.Equal(before, after) {
		return nil
	}
	path := field.NewPath("spec", "trainer", "numNodes")
	forbidden := func(why string) field.ErrorList {
		return field.ErrorList{field.Forbidden(path, "field is immutable: "+why)}
	}
	switch {
	case torch.ElasticPolicy(spec.MLPolicy) == nil:
		return forbidden("numNodes may change only for a job on a runtime with mlPolicy.torch.elasticPolicy")
	case !r.elastic:
		return forbidden(fmt.Sprintf("elastic PyTorch needs the manager's %s feature gate (off)", torch.ElasticGateName))
	case after == nil:
		return forbidden("an elastic job's numNodes may change but not be removed")
	case trainer.IsFinished(oldJob.Status.Conditions):
		return forbidden("the job has finished")
	case oldJob.Labels[KueueQueueNameLabel] != "" && !ptr.Deref(oldJob.Spec.Suspend, false) && !ptr.Deref(newJob.Spec.Suspend, false):
		return forbidden("Kueue admitted this job with its node count; suspend it (or let Kueue) before resizing")
	}
	return nil
}

// validateElasticGate refuses a new TrainJob on an elastic runtime while
// the TrainJobElasticPyTorch gate is off. Jobs admitted while it was on are
// left to run (and to be updated, but not resized) when it is turned off.
func (r *Runtime) validateElasticGate(newJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) field.ErrorList {
	if r.elastic || spec == nil || torch.ElasticPolicy(spec.MLPolicy) == nil {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "runtimeRef"), fmt.Sprintf(
		"runtime %s has mlPolicy.torch.elasticPolicy, which needs the manager's %s feature gate (off)", newJob.Spec.RuntimeRef.Name, torch.ElasticGateName))}
}
