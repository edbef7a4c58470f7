package nodeset

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SlurmNodeName must be the name slurmd (-Z, no -N) registers: its
// hostname. A mismatch makes a busy node look unknown to Gantry.
func TestSlurmNodeName(t *testing.T) {
	long := strings.Repeat("a", 60) + "-b-0"
	tests := []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"pod name", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cpu-0"}}, "cpu-0"},
		{"template hostname", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cpu-0"}, Spec: corev1.PodSpec{Hostname: "node-0"}}, "node-0"},
		{"host network: the node's hostname, dots included",
			corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cpu-0"}, Spec: corev1.PodSpec{HostNetwork: true, NodeName: "ip-10-0-0-1.ec2.internal"}},
			"ip-10-0-0-1.ec2.internal"},
		{"host network, short node name",
			corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cpu-0"}, Spec: corev1.PodSpec{HostNetwork: true, NodeName: "worker-3"}},
			"worker-3"},
		{"a long pod name is cut as kubelet cuts the hostname",
			corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long}}, strings.Repeat("a", 60) + "-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SlurmNodeName(&tt.pod); got != tt.want {
				t.Errorf("SlurmNodeName = %q, want %q", got, tt.want)
			}
		})
	}
}
