package podspec

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

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

// FromRayJob reports a cluster a RayJob created; KubeRay's RayJob
// controller makes the PodGroup for those itself.
func FromRayJob(cluster *rayv1.RayCluster) bool {
	return cluster.Labels[rayv1.RayOriginatedFromCRDLabelKey] == "RayJob"
}

func GangSchedulingRequested(cluster *rayv1.RayCluster) bool {
	_, ok := cluster.Labels[rayv1.RayGangSchedulingEnabled]
	return ok
}

// VolcanoPodGroupName is ray-<name>-pg, named after the RayJob for a
// cluster a RayJob created.
func VolcanoPodGroupName(cluster *rayv1.RayCluster) string {
	name := cluster.Name
	if FromRayJob(cluster) {
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
		pod.Annotations[VolcanoGroupNameAnnotationKey] = VolcanoPodGroupName(cluster)
		pod.Annotations[VolcanoTaskSpecAnnotationKey] = group
	case BatchSchedulerYuniKorn:
		pod.Spec.SchedulerName = BatchSchedulerYuniKorn
		copyLabel(YuniKornAppIDLabelKey, YuniKornPodAppIDLabelKey)
		copyLabel(YuniKornQueueLabelKey, YuniKornPodQueueLabelKey)
		if GangSchedulingRequested(cluster) {
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
		if GangSchedulingRequested(cluster) {
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
		for k, q := range PodResources(podSpec) {
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
