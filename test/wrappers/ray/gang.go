package raytesting

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// GangCluster is a cluster for batch-scheduler tests: a head of 1 CPU / 2Gi, a "cpu" group of 2 replicas (min 1)
// of 2 CPU / 4Gi, and a two-host "tpu" group of 1 replica (min 1) of 1 CPU.
func GangCluster() *RayClusterWrapper {
	w := MakeRayCluster("rc", "ns").
		HeadLimits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}).
		WorkerGroup("cpu", 2).
		WorkerLimits("cpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}).
		MultiHostWorkerGroup("tpu", 1, 2).
		WorkerLimits("tpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	w.Group("cpu").MinReplicas = ptr.To[int32](1)
	w.Group("tpu").MinReplicas = ptr.To[int32](1)
	return w
}
