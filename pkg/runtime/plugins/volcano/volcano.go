// Package volcano is the gang-scheduling policy for the Volcano scheduler:
// one PodGroup (scheduling.volcano.sh/v1beta1) per TrainJob, named after
// it and sized to all of its pods, and on every pod the annotation by which
// Volcano finds the group.
//
// Like coscheduling, the PodGroup CRD is optional: when Volcano is not
// installed the plugin renders nothing and leaves a warning in Info, so the
// job still runs (without gang guarantees). The PodGroup is built as
// unstructured so that Gantry does not depend on Volcano's API module.
package volcano

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
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

func (v *Volcano) crdInstalled() (bool, error) {
	if v.mapper == nil {
		return false, nil
	}
	_, err := v.mapper.RESTMapping(PodGroupGVK.GroupKind(), PodGroupGVK.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("looking up the Volcano PodGroup kind: %w", err)
}

// EnforcePodGroupPolicy annotates every pod with the PodGroup name, or
// records a warning when the CRD is missing. Build follows the annotation,
// so one build never sees the CRD both present and absent.
func (v *Volcano) EnforcePodGroupPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	if !active(info) || trainJob == nil {
		return nil
	}
	installed, err := v.crdInstalled()
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
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(PodGroupGVK)
	err := existing.Get(ctx, client.ObjectKeyFromObject(trainJob), current)
	switch {
	case err == nil:
		if !ptr.Deref(trainJob.Spec.Suspend, false) {
			return nil, nil
		}
	case !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
		return nil, fmt.Errorf("looking up Volcano PodGroup %s: %w", client.ObjectKeyFromObject(trainJob), err)
	}
	pg, err := podGroup(info, trainJob)
	if err != nil {
		return nil, err
	}
	return []plugin.Component{{Object: pg}}, nil
}

// podGroup renders the PodGroup: minMember is the pods of one Job of each
// replicated job and minResources their summed requests (as coscheduling,
// and Trainer v2.3, count them);
// the queue comes from the JobSet-level annotation, priorityClassName from
// the pod templates (the last replicated job that names one), and the
// policy's networkTopology is passed through.
func podGroup(info *plugin.Info, trainJob *trainer.TrainJob) (*unstructured.Unstructured, error) {
	var members int64
	sum := corev1.ResourceList{}
	for _, ps := range info.PodSets {
		// As Trainer v2.3: parallelism, not parallelism × replicas.
		pods := ps.Count
		members += int64(pods)
		plugin.AddResources(sum, plugin.MultiplyResources(ps.SinglePodRequests, pods))
	}
	total := map[string]any{}
	for name, q := range sum {
		total[string(name)] = q.String()
	}
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

	metadata, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(plugin.OwnedObjectMeta(trainJob.Name, trainJob, nil)))
	if err != nil {
		return nil, err
	}
	delete(metadata, "creationTimestamp")
	pg := &unstructured.Unstructured{Object: map[string]any{"metadata": metadata, "spec": spec}}
	pg.SetGroupVersionKind(PodGroupGVK)
	return pg, nil
}
