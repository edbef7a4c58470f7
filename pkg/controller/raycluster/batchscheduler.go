package raycluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
)

// Batch schedulers, by the names KubeRay v1.6's --batch-scheduler takes.
// The scheduler is chosen once for the whole manager, as in KubeRay; with
// none, Pods go to the default scheduler untouched.
const (
	BatchSchedulerVolcano          = "volcano"
	BatchSchedulerYuniKorn         = "yunikorn"
	BatchSchedulerSchedulerPlugins = "scheduler-plugins"
	BatchSchedulerKAI              = "kai-scheduler"
)

// BatchSchedulers lists the accepted --batch-scheduler values.
var BatchSchedulers = []string{BatchSchedulerVolcano, BatchSchedulerYuniKorn, BatchSchedulerSchedulerPlugins, BatchSchedulerKAI}

// Labels and annotations the batch schedulers read, as KubeRay v1.6 sets
// them (controllers/ray/batchscheduler).
const (
	// VolcanoQueueNameLabelKey on the RayCluster names the Volcano queue of
	// its PodGroup and Pods.
	VolcanoQueueNameLabelKey = "volcano.sh/queue-name"
	// VolcanoNetworkTopologyModeLabelKey and
	// VolcanoNetworkTopologyHighestTierLabelKey on the RayCluster set the
	// PodGroup's networkTopology.
	VolcanoNetworkTopologyModeLabelKey        = "volcano.sh/network-topology-mode"
	VolcanoNetworkTopologyHighestTierLabelKey = "volcano.sh/network-topology-highest-tier-allowed"
	// VolcanoGroupNameAnnotationKey names a Pod's PodGroup, and
	// VolcanoTaskSpecAnnotationKey its task (the Ray group).
	VolcanoGroupNameAnnotationKey = "scheduling.k8s.io/group-name"
	VolcanoTaskSpecAnnotationKey  = "volcano.sh/task-spec"

	// YuniKornAppIDLabelKey and YuniKornQueueLabelKey on the RayCluster
	// become the Pods' applicationId and queue labels.
	YuniKornAppIDLabelKey           = "yunikorn.apache.org/app-id"
	YuniKornQueueLabelKey           = "yunikorn.apache.org/queue"
	YuniKornPodAppIDLabelKey        = "applicationId"
	YuniKornPodQueueLabelKey        = "queue"
	YuniKornTaskGroupsAnnotation    = "yunikorn.apache.org/task-groups"
	YuniKornTaskGroupNameAnnotation = "yunikorn.apache.org/task-group-name"

	// SchedulerPluginsPodGroupLabelKey names a Pod's scheduler-plugins
	// PodGroup; SchedulerPluginsSchedulerName is that scheduler's default
	// profile name (KubeRay's choice).
	SchedulerPluginsPodGroupLabelKey = "scheduling.x-k8s.io/pod-group"
	SchedulerPluginsSchedulerName    = "scheduler-plugins-scheduler"

	// KAIQueueLabelKey on the RayCluster names its KAI queue.
	KAIQueueLabelKey = "kai.scheduler/queue"
)

// The PodGroup kinds Gantry creates for a RayCluster. They are written as
// unstructured objects, so Gantry does not link either scheduler's module.
var (
	VolcanoPodGroupGVK          = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}
	SchedulerPluginsPodGroupGVK = schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"}
)

// ValidateBatchScheduler checks the --batch-scheduler and the deprecated
// --enable-batch-scheduler settings the way KubeRay does, and returns the
// scheduler in effect: the legacy switch means Volcano.
func ValidateBatchScheduler(name string, legacyEnable bool) (string, error) {
	switch {
	case legacyEnable && name != "":
		return "", fmt.Errorf("both --enable-batch-scheduler (deprecated) and --batch-scheduler are set; use --batch-scheduler only")
	case legacyEnable:
		return BatchSchedulerVolcano, nil
	case name == "" || slices.Contains(BatchSchedulers, name):
		return name, nil
	}
	return "", fmt.Errorf("batch scheduler %q is not supported; use one of %v", name, BatchSchedulers)
}

// fromRayJob reports a cluster a RayJob created; KubeRay's RayJob
// controller makes the PodGroup for those itself.
func fromRayJob(cluster *rayv1.RayCluster) bool {
	return cluster.Labels[rayv1.RayOriginatedFromCRDLabelKey] == "RayJob"
}

func gangSchedulingRequested(cluster *rayv1.RayCluster) bool {
	_, ok := cluster.Labels[rayv1.RayGangSchedulingEnabled]
	return ok
}

// volcanoPodGroupName is ray-<name>-pg, named after the RayJob for a
// cluster a RayJob created.
func volcanoPodGroupName(cluster *rayv1.RayCluster) string {
	name := cluster.Name
	if fromRayJob(cluster) {
		if job := cluster.Labels[rayv1.RayOriginatedFromCRNameLabelKey]; job != "" {
			name = job
		}
	}
	return "ray-" + name + "-pg"
}

// decorateForBatchScheduler adds what scheduler needs to a Pod of the Ray
// group (rayv1.RayNodeHeadGroupLabelValue for the head): its scheduler
// name, and the labels and annotations that tie it to a queue and a gang.
// Like KubeRay, the scheduler name replaces the template's.
func decorateForBatchScheduler(scheduler string, cluster *rayv1.RayCluster, pod *corev1.Pod, group string) {
	if scheduler == "" {
		return
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	copyLabel := func(from, to string) {
		if v := cluster.Labels[from]; v != "" {
			pod.Labels[to] = v
		}
	}
	switch scheduler {
	case BatchSchedulerVolcano:
		pod.Spec.SchedulerName = BatchSchedulerVolcano
		copyLabel(VolcanoQueueNameLabelKey, VolcanoQueueNameLabelKey)
		copyLabel(rayv1.RayPriorityClassName, rayv1.RayPriorityClassName)
		pod.Annotations[VolcanoGroupNameAnnotationKey] = volcanoPodGroupName(cluster)
		pod.Annotations[VolcanoTaskSpecAnnotationKey] = group
	case BatchSchedulerYuniKorn:
		pod.Spec.SchedulerName = BatchSchedulerYuniKorn
		copyLabel(YuniKornAppIDLabelKey, YuniKornPodAppIDLabelKey)
		copyLabel(YuniKornQueueLabelKey, YuniKornPodQueueLabelKey)
		if gangSchedulingRequested(cluster) {
			groups := cluster.Annotations[YuniKornTaskGroupsAnnotation]
			if groups == "" {
				groups = yuniKornTaskGroups(&cluster.Spec)
			}
			pod.Annotations[YuniKornTaskGroupsAnnotation] = groups
			if group != "" {
				pod.Annotations[YuniKornTaskGroupNameAnnotation] = group
			}
		}
	case BatchSchedulerSchedulerPlugins:
		pod.Spec.SchedulerName = SchedulerPluginsSchedulerName
		if gangSchedulingRequested(cluster) {
			pod.Labels[SchedulerPluginsPodGroupLabelKey] = cluster.Name
		}
	case BatchSchedulerKAI:
		// KAI's own pod grouper makes the PodGroup; a Pod without a queue
		// stays pending there, as with KubeRay.
		pod.Spec.SchedulerName = BatchSchedulerKAI
		copyLabel(KAIQueueLabelKey, KAIQueueLabelKey)
	}
}

// yuniKornTaskGroup is one entry of YuniKorn's task-groups annotation, in
// the field order YuniKorn's shim and KubeRay write it.
type yuniKornTaskGroup struct {
	MinResource               map[string]resource.Quantity      `json:"minResource"`
	NodeSelector              map[string]string                 `json:"nodeSelector,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	Name                      string                            `json:"name"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	MinMember                 int32                             `json:"minMember"`
}

// yuniKornTaskGroups is the task-groups annotation of a cluster: the head
// (one member) and every worker group with minReplicas × numOfHosts
// members, each with one Pod's resources.
func yuniKornTaskGroups(spec *rayv1.RayClusterSpec) string {
	group := func(name string, members int32, podSpec *corev1.PodSpec) yuniKornTaskGroup {
		min := map[string]resource.Quantity{}
		for k, q := range podResources(podSpec) {
			min[string(k)] = q
		}
		return yuniKornTaskGroup{Name: name, MinMember: members, MinResource: min,
			NodeSelector: podSpec.NodeSelector, Tolerations: podSpec.Tolerations, Affinity: podSpec.Affinity}
	}
	groups := []yuniKornTaskGroup{group(rayv1.RayNodeHeadGroupLabelValue, 1, &spec.HeadGroupSpec.Template.Spec)}
	for i := range spec.WorkerGroupSpecs {
		w := &spec.WorkerGroupSpecs[i]
		groups = append(groups, group(w.GroupName, ptr.Deref(w.MinReplicas, 0)*w.Hosts(), &w.Template.Spec))
	}
	data, err := json.Marshal(groups)
	if err != nil {
		// Only unmarshalable values fail, and these types have none.
		panic(fmt.Sprintf("marshalling YuniKorn task groups: %v", err))
	}
	return string(data)
}

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
	case scheduler == BatchSchedulerVolcano && !fromRayJob(cluster):
		gvk, name = VolcanoPodGroupGVK, volcanoPodGroupName(cluster)
	case scheduler == BatchSchedulerSchedulerPlugins && gangSchedulingRequested(cluster):
		gvk, name = SchedulerPluginsPodGroupGVK, cluster.Name
	default:
		return nil, nil
	}
	members, res := cluster.Spec.DesiredWorkerPods()+1, desiredResources(&cluster.Spec)
	if scheduler == BatchSchedulerVolcano && cluster.Spec.AutoscalingEnabled() {
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
	pg.SetOwnerReferences([]metav1.OwnerReference{ownerReference(cluster)})
	if scheduler != BatchSchedulerVolcano {
		return &podGroupPlan{obj: pg}, nil
	}
	if len(cluster.Annotations) > 0 {
		pg.SetAnnotations(maps.Clone(cluster.Annotations))
	}
	if q := cluster.Labels[VolcanoQueueNameLabelKey]; q != "" {
		spec["queue"] = q
	}
	if pc := cluster.Labels[rayv1.RayPriorityClassName]; pc != "" {
		spec["priorityClassName"] = pc
	}
	if mode, ok := cluster.Labels[VolcanoNetworkTopologyModeLabelKey]; ok {
		topo := map[string]any{"mode": mode}
		if tier, ok := cluster.Labels[VolcanoNetworkTopologyHighestTierLabelKey]; ok {
			n, err := strconv.Atoi(tier)
			if err != nil {
				return nil, fmt.Errorf("label %s=%q is not a number: %w", VolcanoNetworkTopologyHighestTierLabelKey, tier, err)
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
	return clusterResources(spec, func(g *rayv1.WorkerGroupSpec) int64 { return int64(ptr.Deref(g.MinReplicas, 0)) * int64(g.Hosts()) })
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
