package syncobject

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestDerivative(t *testing.T) {
	probe := func(p *corev1.Probe) *corev1.Container {
		return &corev1.Container{Name: "c", Image: "i", ReadinessProbe: p}
	}
	exec := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
	defaulted := &corev1.Probe{ProbeHandler: exec, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	cases := []struct {
		name          string
		desired, live any
		want          bool
	}{
		{"server-defaulted probe ints are not drift", probe(&corev1.Probe{ProbeHandler: exec}), probe(defaulted), true},
		{"a probe int desired sets must match", probe(&corev1.Probe{ProbeHandler: exec, PeriodSeconds: 5}), probe(defaulted), false},
		{"replicas 0 behind a pointer is a request", &struct{ R *int32 }{ptr.To[int32](0)}, &struct{ R *int32 }{ptr.To[int32](3)}, false},
		{"nil pointer is unset", &struct{ R *int32 }{}, &struct{ R *int32 }{ptr.To[int32](3)}, true},
		{"string set and equal", &corev1.Container{Image: "a"}, &corev1.Container{Image: "a", Name: "x"}, true},
		{"string set and different", &corev1.Container{Image: "a"}, &corev1.Container{Image: "b"}, false},
		{"env removed from live", &corev1.Container{Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}, &corev1.Container{}, false},
		{"list length differs", []string{"a"}, []string{"a", "b"}, false},
		{"map subset", map[string]string{"a": "1"}, map[string]string{"a": "1", "b": "2"}, true},
		{"map value differs", map[string]string{"a": "1"}, map[string]string{"a": "2"}, false},
		{"quantities compare semantically", corev1.ResourceList{"cpu": resource.MustParse("1000m")}, corev1.ResourceList{"cpu": resource.MustParse("1")}, true},
		{"zero intstr is unset", &corev1.ServicePort{Port: 80}, &corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP}, true},
		{"intstr set and different", &corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(81)}, &corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(80)}, false},
		{"unstructured zero int is unset", map[string]any{"p": int64(0)}, map[string]any{"p": int64(10)}, true},
		{"unstructured nested differs", map[string]any{"a": map[string]any{"b": "x"}}, map[string]any{"a": map[string]any{"b": "y"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Derivative(tc.desired, tc.live); got != tc.want {
				t.Fatalf("Derivative = %v, want %v", got, tc.want)
			}
		})
	}
}
