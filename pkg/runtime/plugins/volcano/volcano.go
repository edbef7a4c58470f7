package volcano

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "Volcano"

const (
	// GroupNameAnnotation on a pod names the Volcano PodGroup it belongs to.
	GroupNameAnnotation = "scheduling.k8s.io/group-name"
	// QueueAnnotation on the runtime's template (or a runtime patch's)
	// selects the Volcano queue of the PodGroup.
	QueueAnnotation = "scheduling.volcano.sh/queue-name"
)

// PodGroupGVK is the kind the plugin creates.
var PodGroupGVK = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}

// CRDMissingWarning is left in Info when the policy asks for Volcano but
// the PodGroup kind is not served.
const CRDMissingWarning = "the runtime asks for Volcano gang scheduling but the PodGroup CRD (scheduling.volcano.sh/v1beta1) is not installed; pods are scheduled without gang scheduling"

// Volcano implements the validation, pod-group-policy and component-builder
// extension points.
type Volcano struct {
	// mapper answers whether the PodGroup kind is served; nil means never.
	mapper meta.RESTMapper
}

var (
	_ plugin.CustomValidationPlugin      = (*Volcano)(nil)
	_ plugin.EnforcePodGroupPolicyPlugin = (*Volcano)(nil)
	_ plugin.ComponentBuilderPlugin      = (*Volcano)(nil)
)

// New returns the plugin. The mapper is asked on every build, so
// installing Volcano later takes effect without a restart.
func New(mapper meta.RESTMapper) *Volcano {
	return &Volcano{mapper: mapper}
}

// Name implements plugin.Plugin.
func (*Volcano) Name() string { return Name }

func active(info *plugin.Info) bool {
	return info != nil && info.PodGroupPolicy != nil && info.PodGroupPolicy.Volcano != nil
}

// Validate refuses a queue annotation that is present but empty. Trainer
// also looks up the pod templates' PriorityClass in the cluster; Validate
// reads nothing from the cluster, so that check is left to the API server,
// which refuses pods naming a missing PriorityClass (see docs/trainjob.md).
func (*Volcano) Validate(info *plugin.Info, _, newJob *trainer.TrainJob) field.ErrorList {
	if !active(info) || newJob == nil {
		return nil
	}
	if queue, ok := info.Annotations[QueueAnnotation]; ok && queue == "" {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "annotations").Key(QueueAnnotation), queue,
			"the Volcano queue must be named when the annotation is set")}
	}
	return nil
}

// EnforcePodGroupPolicy annotates every pod with the PodGroup name, or
// records a warning when the CRD is missing. Build follows the annotation,
// so one build never sees the CRD both present and absent.
func (v *Volcano) EnforcePodGroupPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	if !active(info) || trainJob == nil {
		return nil
	}
	installed, err := plugin.KindServed(v.mapper, PodGroupGVK)
	if err != nil {
		return err
	}
	if !installed {
		info.Warnings = append(info.Warnings, CRDMissingWarning)
		return nil
	}
	info.Scheduler.PodAnnotations[GroupNameAnnotation] = trainJob.Name
	return nil
}

// Build returns the PodGroup. An existing PodGroup is only rewritten while
// the TrainJob is suspended, as coscheduling's and the JobSet are.
func (v *Volcano) Build(ctx context.Context, existing client.Reader, info *plugin.Info, trainJob *trainer.TrainJob) ([]plugin.Component, error) {
	if !active(info) || trainJob == nil || info.Scheduler.PodAnnotations[GroupNameAnnotation] != trainJob.Name {
		return nil, nil
	}
	return plugin.BuildPodGroup(ctx, existing, trainJob, PodGroupGVK, podGroupSpec(info))
}

// podGroupSpec is the PodGroup's spec: the gang's minimum (as
// coscheduling's), the queue from the JobSet-level annotation,
// priorityClassName from the pod templates (the last replicated job that
// names one), and the policy's networkTopology passed through.
func podGroupSpec(info *plugin.Info) map[string]any {
	members, total := plugin.GangMinimum(info)
	spec := map[string]any{
		"minMember":    members,
		"minResources": total,
	}
	if queue, ok := info.Annotations[QueueAnnotation]; ok {
		spec["queue"] = queue
	}
	for _, rJob := range info.Template.ReplicatedJobs {
		if pc := rJob.Template.Spec.Template.Spec.PriorityClassName; pc != "" {
			spec["priorityClassName"] = pc
		}
	}
	if nt := info.PodGroupPolicy.Volcano.NetworkTopology; nt != nil {
		topology := map[string]any{}
		if nt.Mode != nil {
			topology["mode"] = string(*nt.Mode)
		}
		if nt.HighestTierAllowed != nil {
			topology["highestTierAllowed"] = int64(*nt.HighestTierAllowed)
		}
		spec["networkTopology"] = topology
	}
	return spec
}
