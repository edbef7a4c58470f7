package raycluster

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
)

// podGroupPlan is the PodGroup a cluster needs under a batch scheduler.
type podGroupPlan struct {
	obj *unstructured.Unstructured
	// resize: an existing PodGroup's minMember and minResources follow the
	// cluster (Volcano); otherwise it is only created (scheduler-plugins).
	resize bool
}

// desiredPodGroup returns the PodGroup the scheduler needs for cluster, or
// nil when it needs none.
//
//   - Volcano: ray-<name>-pg for every cluster (not those a RayJob made), with
//     minMember the head plus the desired workers and minResources their
//     sum; with autoscaling on, the minimum workers instead. The queue and
//     priority class come from the cluster's labels, the annotations are
//     the cluster's.
//   - scheduler-plugins: <name>, only for clusters labelled
//     ray.io/gang-scheduling-enabled, sized to the head and desired workers.
//
// Unlike KubeRay, the desired resources count the replicas clamped to
// [minReplicas, maxReplicas] (as minMember does), and the minimum skips
// suspended groups in resources as it does in members.
func desiredPodGroup(scheduler string, cluster *rayv1.RayCluster) (*podGroupPlan, error) {
	var gvk schema.GroupVersionKind
	var name string
	switch {
	case scheduler == podspec.BatchSchedulerVolcano && !podspec.FromRayJob(cluster):
		gvk, name = podspec.VolcanoPodGroupGVK, podspec.VolcanoPodGroupName(cluster)
	case scheduler == podspec.BatchSchedulerSchedulerPlugins && podspec.GangSchedulingRequested(cluster):
		gvk, name = podspec.SchedulerPluginsPodGroupGVK, cluster.Name
	default:
		return nil, nil
	}
	members, res := cluster.Spec.DesiredWorkerPods()+1, podspec.DesiredResources(&cluster.Spec)
	if scheduler == podspec.BatchSchedulerVolcano && cluster.Spec.AutoscalingEnabled() {
		members, res = cluster.Spec.MinWorkerPods()+1, minResources(&cluster.Spec)
	}
	spec := map[string]any{
		"minMember":    int64(members),
		"minResources": resourceMap(res),
	}
	pg := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	pg.SetGroupVersionKind(gvk)
	pg.SetNamespace(cluster.Namespace)
	pg.SetName(name)
	pg.SetOwnerReferences([]metav1.OwnerReference{podspec.OwnerReference(cluster)})
	if scheduler != podspec.BatchSchedulerVolcano {
		return &podGroupPlan{obj: pg}, nil
	}
	if len(cluster.Annotations) > 0 {
		pg.SetAnnotations(maps.Clone(cluster.Annotations))
	}
	if q := cluster.Labels[podspec.VolcanoQueueNameLabelKey]; q != "" {
		spec["queue"] = q
	}
	if pc := cluster.Labels[rayv1.RayPriorityClassName]; pc != "" {
		spec["priorityClassName"] = pc
	}
	if mode, ok := cluster.Labels[podspec.VolcanoNetworkTopologyModeLabelKey]; ok {
		topo := map[string]any{"mode": mode}
		if tier, ok := cluster.Labels[podspec.VolcanoNetworkTopologyHighestTierLabelKey]; ok {
			n, err := strconv.Atoi(tier)
			if err != nil {
				return nil, fmt.Errorf("label %s=%q is not a number: %w", podspec.VolcanoNetworkTopologyHighestTierLabelKey, tier, err)
			}
			topo["highestTierAllowed"] = int64(n)
		}
		spec["networkTopology"] = topo
	}
	return &podGroupPlan{obj: pg, resize: true}, nil
}

// minResources sums the head and minReplicas × numOfHosts Pods of every
// unsuspended worker group.
func minResources(spec *rayv1.RayClusterSpec) corev1.ResourceList {
	return podspec.ClusterResources(spec, func(g *rayv1.WorkerGroupSpec) int64 { return int64(ptr.Deref(g.MinReplicas, 0)) * int64(g.Hosts()) })
}

func resourceMap(list corev1.ResourceList) map[string]any {
	out := make(map[string]any, len(list))
	for name, q := range list {
		out[string(name)] = q.String()
	}
	return out
}

// sameSize reports whether a live PodGroup already has the planned
// minMember and minResources (quantities compared by value, so "1" and
// "1000m" agree).
func sameSize(live, want *unstructured.Unstructured) bool {
	lm, _, _ := unstructured.NestedInt64(live.Object, "spec", "minMember")
	wm, _, _ := unstructured.NestedInt64(want.Object, "spec", "minMember")
	if lm != wm {
		return false
	}
	lr, _, _ := unstructured.NestedMap(live.Object, "spec", "minResources")
	wr, _, _ := unstructured.NestedMap(want.Object, "spec", "minResources")
	if len(lr) != len(wr) {
		return false
	}
	for name, w := range wr {
		l, ok := lr[name].(string)
		if !ok {
			return false
		}
		lq, err1 := resource.ParseQuantity(l)
		wq, err2 := resource.ParseQuantity(w.(string))
		if err1 != nil || err2 != nil || lq.Cmp(wq) != 0 {
			return false
		}
	}
	return true
}

// reconcilePodGroup creates the PodGroup the batch scheduler needs before
// any Pod exists, and keeps a Volcano PodGroup sized to the cluster. It is
// read live (not cached): only clusters under a gang scheduler pay the
// read, and no informer is held for a kind most clusters lack. A missing
// CRD is an error naming it, so the cluster's Pods are not created into a
// gang that can never form.
func (r *Reconciler) reconcilePodGroup(ctx context.Context, s *scope) error {
	plan, err := desiredPodGroup(r.cfg.Build.BatchScheduler, s.Object)
	if err != nil || plan == nil {
		return err
	}
	want := plan.obj
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(want.GroupVersionKind())
	err = r.apiReader.Get(ctx, client.ObjectKeyFromObject(want), live)
	switch {
	case meta.IsNoMatchError(err):
		return fmt.Errorf("batch scheduler %s needs the PodGroup CRD (%s), which is not installed: %w", r.cfg.Build.BatchScheduler, want.GroupVersionKind().GroupVersion(), err)
	case apierrors.IsNotFound(err):
		if err := r.client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PodGroup %s: %w", want.GetName(), err)
		}
		s.Events.Add("CreatedPodGroup", "Created %s PodGroup %s", r.cfg.Build.BatchScheduler, want.GetName())
		return nil
	case err != nil:
		return fmt.Errorf("reading PodGroup %s: %w", want.GetName(), err)
	case !plan.resize || sameSize(live, want):
		return nil
	}
	spec, _, _ := unstructured.NestedMap(want.Object, "spec")
	for _, field := range []string{"minMember", "minResources"} {
		if err := unstructured.SetNestedField(live.Object, spec[field], "spec", field); err != nil {
			return err
		}
	}
	if err := r.client.Update(ctx, live); err != nil {
		return fmt.Errorf("resizing PodGroup %s: %w", want.GetName(), err)
	}
	s.Events.Add("UpdatedPodGroup", "Resized PodGroup %s to %d members", want.GetName(), spec["minMember"])
	return nil
}
