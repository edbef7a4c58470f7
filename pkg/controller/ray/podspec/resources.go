package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// DesiredResources sums what the head Pod and every unsuspended worker
// group's desired Pods ask of Kubernetes. Worker groups count their clamped
// replicas times numOfHosts, matching desiredWorkerReplicas (KubeRay uses the
// unclamped replicas here, which over-reports a group above maxReplicas).
func DesiredResources(spec *rayv1.RayClusterSpec) corev1.ResourceList {
	return ClusterResources(spec, func(g *rayv1.WorkerGroupSpec) int64 { return int64(g.DesiredPods()) })
}

// ClusterResources sums the head Pod's resources and, for every unsuspended
// worker group, one Pod's times pods(group).
func ClusterResources(spec *rayv1.RayClusterSpec, pods func(*rayv1.WorkerGroupSpec) int64) corev1.ResourceList {
	total := corev1.ResourceList{}
	addResources(total, PodResources(&spec.HeadGroupSpec.Template.Spec), 1)
	for i := range spec.WorkerGroupSpecs {
		group := &spec.WorkerGroupSpecs[i]
		if group.IsSuspended() {
			continue
		}
		addResources(total, PodResources(&group.Template.Spec), pods(group))
	}
	return total
}

// PodResources is one Pod's resources, summed over its containers; a
// container's request wins over its limit for the same resource, and a limit
// alone counts (Kubernetes defaults the request to it).
func PodResources(podSpec *corev1.PodSpec) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range podSpec.Containers {
		res := &podSpec.Containers[i].Resources
		for name, q := range res.Requests {
			addQuantity(sum, name, q, 1)
		}
		for name, q := range res.Limits {
			if _, requested := res.Requests[name]; !requested {
				addQuantity(sum, name, q, 1)
			}
		}
	}
	return sum
}

func addResources(total, add corev1.ResourceList, times int64) {
	if times <= 0 {
		return
	}
	for name, q := range add {
		addQuantity(total, name, q, times)
	}
}

// addQuantity adds q×times to list[name] without touching q's backing data.
func addQuantity(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity, times int64) {
	scaled := q.DeepCopy()
	if times != 1 {
		scaled.Mul(times)
	}
	sum := list[name].DeepCopy()
	sum.Add(scaled)
	list[name] = sum
}
