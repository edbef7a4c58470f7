package podcond

import corev1 "k8s.io/api/core/v1"

// ReadyCondition is the pod's Ready condition when it is True, else nil.
func ReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodReady {
			if c.Status == corev1.ConditionTrue {
				return c
			}
			return nil
		}
	}
	return nil
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(pod *corev1.Pod) bool { return ReadyCondition(pod) != nil }
