package podcond

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestIsReady(t *testing.T) {
	cond := func(typ corev1.PodConditionType, st corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: st}
	}
	cases := []struct {
		name  string
		conds []corev1.PodCondition
		want  bool
	}{
		{"no conditions", nil, false},
		{"ready", []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionTrue)}, true},
		{"not ready", []corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionFalse)}, false},
		{"unknown", []corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionUnknown)}, false},
		{"only other conditions true", []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue)}, false},
	}
	for _, tc := range cases {
		pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: tc.conds}}
		if got := IsReady(pod); got != tc.want {
			t.Errorf("%s: IsReady = %v, want %v", tc.name, got, tc.want)
		}
		if c := ReadyCondition(pod); (c != nil) != tc.want || (c != nil && c.Type != corev1.PodReady) {
			t.Errorf("%s: ReadyCondition = %+v", tc.name, c)
		}
	}
}
