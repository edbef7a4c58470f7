package plugin

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodRequests is what the scheduler reserves for one pod of spec: the sum of
// the containers and sidecars, or the largest regular init container plus
// the sidecars started before it when that is more, plus the pod overhead.
// It follows the kubelet's rule without importing component-helpers.
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range spec.Containers {
		addTo(total, c.Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addTo(sidecars, c.Resources.Requests)
			addTo(total, c.Resources.Requests)
			continue
		}
		// A regular init container runs next to the sidecars started before it.
		running := corev1.ResourceList{}
		addTo(running, sidecars)
		addTo(running, c.Resources.Requests)
		maxInto(initPeak, running)
	}
	maxInto(total, initPeak)
	addTo(total, spec.Overhead)
	return total
}

func addTo(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

func maxInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

// GPUCount is the GPUs in res: any resource whose name contains "gpu"
// (nvidia.com/gpu, amd.com/gpu), requests first, then limits.
func GPUCount(res corev1.ResourceRequirements) int64 {
	if n := gpuIn(res.Requests); n > 0 {
		return n
	}
	return gpuIn(res.Limits)
}

func gpuIn(list corev1.ResourceList) int64 {
	for name, q := range list {
		if strings.Contains(strings.ToLower(string(name)), "gpu") {
			return q.Value()
		}
	}
	return 0
}

// MultiplyResources returns list times n without touching list.
func MultiplyResources(list corev1.ResourceList, n int32) corev1.ResourceList {
	out := make(corev1.ResourceList, len(list))
	for name, q := range list {
		scaled := q.DeepCopy()
		scaled.Mul(int64(n))
		out[name] = scaled
	}
	return out
}

// AddResources adds src into dst.
func AddResources(dst, src corev1.ResourceList) { addTo(dst, src) }
