package plugin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// What the gang-scheduling plugins (coscheduling, Volcano) share: whether
// their PodGroup kind is served, the gang's minimum, and when a PodGroup is
// (re)written.

// KindServed reports whether mapper serves gvk; a nil mapper serves
// nothing. controller-runtime's mapper rediscovers on a miss, so a CRD
// installed later is found without a restart.
func KindServed(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	if mapper == nil {
		return false, nil
	}
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("looking up the kind %s: %w", gvk.GroupKind(), err)
}

// GangMinimum is a PodGroup's minMember and minResources: the pods of one
// Job of each replicated job (parallelism, not parallelism × replicas, as
// Trainer v2.3 counts them) and their summed requests, as quantity strings.
func GangMinimum(info *Info) (int64, map[string]any) {
	var members int64
	sum := corev1.ResourceList{}
	for _, ps := range info.PodSets {
		members += int64(ps.Count)
		AddResources(sum, MultiplyResources(ps.SinglePodRequests, ps.Count))
	}
	total := make(map[string]any, len(sum))
	for name, q := range sum {
		total[string(name)] = q.String()
	}
	return members, total
}

// BuildPodGroup returns the PodGroup of kind gvk named after trainJob, with
// spec, as the component to apply. Like the JobSet, an existing PodGroup is
// rewritten only while the TrainJob is suspended, when its pods are gone;
// otherwise there is nothing to apply.
func BuildPodGroup(ctx context.Context, existing client.Reader, trainJob *trainer.TrainJob, gvk schema.GroupVersionKind, spec map[string]any) ([]Component, error) {
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(gvk)
	err := existing.Get(ctx, client.ObjectKeyFromObject(trainJob), current)
	switch {
	case err == nil:
		if !ptr.Deref(trainJob.Spec.Suspend, false) {
			return nil, nil
		}
	case !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
		return nil, fmt.Errorf("looking up %s %s: %w", gvk.GroupKind(), client.ObjectKeyFromObject(trainJob), err)
	}
	metadata, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(OwnedObjectMeta(trainJob.Name, trainJob, nil)))
	if err != nil {
		return nil, err
	}
	delete(metadata, "creationTimestamp")
	pg := &unstructured.Unstructured{Object: map[string]any{"metadata": metadata, "spec": spec}}
	pg.SetGroupVersionKind(gvk)
	return []Component{{Object: pg}}, nil
}
