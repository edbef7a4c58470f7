package coscheduling

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "Coscheduling"

// PodGroupLabel names the PodGroup a pod belongs to; the coscheduling
// scheduler plugin groups pods by it.
const PodGroupLabel = "scheduling.x-k8s.io/pod-group"

// DefaultScheduleTimeoutSeconds applies when the policy leaves it unset
// (the CRD defaults it to the same value).
const DefaultScheduleTimeoutSeconds int32 = 60

// PodGroupGVK is the kind the plugin creates.
var PodGroupGVK = schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"}

// CRDMissingWarning is left in Info when the policy asks for coscheduling
// but the PodGroup kind is not served.
const CRDMissingWarning = "the runtime asks for coscheduling but the PodGroup CRD (scheduling.x-k8s.io/v1alpha1) is not installed; pods are scheduled without gang scheduling"

// Coscheduling implements the pod-group-policy and component-builder
// extension points.
type Coscheduling struct {
	// mapper answers whether the PodGroup kind is served; nil means never.
	mapper meta.RESTMapper
}

var (
	_ plugin.EnforcePodGroupPolicyPlugin = (*Coscheduling)(nil)
	_ plugin.ComponentBuilderPlugin      = (*Coscheduling)(nil)
)

// New returns the plugin. The mapper is asked on every TrainJob build, so
// installing the CRD later takes effect without a restart (controller-runtime's
// mapper rediscovers on a miss).
func New(mapper meta.RESTMapper) *Coscheduling {
	return &Coscheduling{mapper: mapper}
}

// Name implements plugin.Plugin.
func (*Coscheduling) Name() string { return Name }

func active(info *plugin.Info) bool {
	return info != nil && info.PodGroupPolicy != nil && info.PodGroupPolicy.Coscheduling != nil
}

// EnforcePodGroupPolicy labels every pod with the PodGroup name, or records
// a warning when the CRD is missing. The label doubles as the decision Build
// follows, so one build never sees the CRD both present and absent.
func (c *Coscheduling) EnforcePodGroupPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	if !active(info) {
		return nil
	}
	installed, err := plugin.KindServed(c.mapper, PodGroupGVK)
	if err != nil {
		return err
	}
	if !installed {
		info.Warnings = append(info.Warnings, CRDMissingWarning)
		return nil
	}
	info.Scheduler.PodLabels[PodGroupLabel] = trainJob.Name
	return nil
}

// Build returns the PodGroup: minMember is the pods of one Job of each
// replicated job (their parallelism; Trainer v2.3 counts a replicated job's
// replicas once), minResources their summed requests. Like the JobSet, an existing PodGroup is only
// rewritten while the TrainJob is suspended, when its pods are gone.
func (c *Coscheduling) Build(ctx context.Context, existing client.Reader, info *plugin.Info, trainJob *trainer.TrainJob) ([]plugin.Component, error) {
	if !active(info) || info.Scheduler.PodLabels[PodGroupLabel] != trainJob.Name {
		return nil, nil
	}
	members, total := plugin.GangMinimum(info)
	timeout := ptr.Deref(info.PodGroupPolicy.Coscheduling.ScheduleTimeoutSeconds, DefaultScheduleTimeoutSeconds)
	return plugin.BuildPodGroup(ctx, existing, trainJob, PodGroupGVK, map[string]any{
		"minMember":              members,
		"minResources":           total,
		"scheduleTimeoutSeconds": int64(timeout),
	})
}
