package status

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// node is a Node whose status has quantities, ignored times at two depths
// and a time that counts (the image list has none; daemon endpoints none).
func node(edit func(*corev1.NodeStatus)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastHeartbeatTime: t0, LastTransitionTime: t0,
			}},
			NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.1"},
		},
	}
	if edit != nil {
		edit(&n.Status)
	}
	return n
}

func podWith(edit func(*corev1.PodStatus)) *corev1.Pod {
	p := pod()
	edit(&p.Status)
	return p
}

// viaUnstructured is the comparison StatusEqual made before it compared
// typed objects field by field: both converted to unstructured.
func viaUnstructured(t *testing.T, a, b client.Object) bool {
	t.Helper()
	conv := func(o client.Object) client.Object {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: m}
	}
	same, err := StatusEqual(conv(a), conv(b))
	if err != nil {
		t.Fatal(err)
	}
	return same
}

// TestStatusEqualTypedAgreesWithJSON: typed objects compare as their JSON
// does, and the ignored timestamps are ignored at any depth.
func TestStatusEqualTypedAgreesWithJSON(t *testing.T) {
	later := metav1.NewTime(t0.Add(time.Hour))
	tests := []struct {
		name string
		a, b client.Object
		want bool
	}{
		{"same", node(nil), node(nil), true},
		{"heartbeat only", node(nil), node(func(s *corev1.NodeStatus) { s.Conditions[0].LastHeartbeatTime = later }), true},
		{"transition only", node(nil), node(func(s *corev1.NodeStatus) { s.Conditions[0].LastTransitionTime = later }), true},
		{"condition status", node(nil), node(func(s *corev1.NodeStatus) { s.Conditions[0].Status = corev1.ConditionFalse }), false},
		{"quantity spelled otherwise", node(nil), node(func(s *corev1.NodeStatus) { s.Capacity[corev1.ResourceCPU] = resource.MustParse("2000m") }), true},
		{"quantity", node(nil), node(func(s *corev1.NodeStatus) { s.Capacity[corev1.ResourceCPU] = resource.MustParse("3") }), false},
		{"map key", node(nil), node(func(s *corev1.NodeStatus) {
			s.Capacity = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2")}
		}), false},
		{"nested struct", node(nil), node(func(s *corev1.NodeStatus) { s.NodeInfo.KernelVersion = "6.2" }), false},
		{"nil and empty list", node(func(s *corev1.NodeStatus) { s.Images = nil }), node(func(s *corev1.NodeStatus) { s.Images = []corev1.ContainerImage{} }), true},
		{"nil and empty map", node(func(s *corev1.NodeStatus) { s.Allocatable = nil }), node(func(s *corev1.NodeStatus) { s.Allocatable = corev1.ResourceList{} }), true},
		{"one more condition", node(nil), node(func(s *corev1.NodeStatus) {
			s.Conditions = append(s.Conditions, corev1.NodeCondition{Type: corev1.NodeMemoryPressure})
		}), false},
		{"probe time only", pod(), podWith(func(s *corev1.PodStatus) { s.Conditions[0].LastProbeTime = later }), true},
		{"start time", podWith(func(s *corev1.PodStatus) { s.StartTime = &t0 }), podWith(func(s *corev1.PodStatus) { s.StartTime = &later }), false},
		{"start time set", pod(), podWith(func(s *corev1.PodStatus) { s.StartTime = &t0 }), false},
		{"start time below a second", podWith(func(s *corev1.PodStatus) { s.StartTime = &t0 }),
			podWith(func(s *corev1.PodStatus) { s.StartTime = ptr.To(metav1.NewTime(t0.Add(time.Millisecond))) }), true},
		{"nil and pointer to empty", node(nil), node(func(s *corev1.NodeStatus) { s.Config = &corev1.NodeConfigStatus{} }), false},
		{"deep pointer", podWith(func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}}}
		}), podWith(func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: later}}}}
		}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StatusEqual(tc.a, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("StatusEqual = %v, want %v", got, tc.want)
			}
			if json := viaUnstructured(t, tc.a, tc.b); json != tc.want {
				t.Errorf("through unstructured = %v, want %v (the case itself is wrong)", json, tc.want)
			}
		})
	}
}

// recursive is a status type that holds itself, with a field JSON leaves
// out and an unexported one.
type recursive struct {
	Name     string      `json:"name"`
	Children []recursive `json:"children,omitempty"`
	Scratch  string      `json:"-"`
	hidden   int
}

type recursiveObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Status            recursive `json:"status"`
}

func (r *recursiveObject) DeepCopyObject() runtime.Object {
	out := *r
	return &out
}

func TestStatusEqualSelfReferenceAndSkippedFields(t *testing.T) {
	mk := func(child, scratch string, hidden int) *recursiveObject {
		return &recursiveObject{Status: recursive{Name: "root", Scratch: scratch, hidden: hidden,
			Children: []recursive{{Name: child, Children: []recursive{{Name: "leaf"}}}}}}
	}
	if same, err := StatusEqual(mk("a", "x", 1), mk("a", "y", 2)); err != nil || !same {
		t.Errorf("fields JSON leaves out count: %v, %v", same, err)
	}
	if same, err := StatusEqual(mk("a", "x", 1), mk("b", "x", 1)); err != nil || same {
		t.Errorf("a nested difference is missed: %v, %v", same, err)
	}
}

func TestStatusEqualRefusesMixedKinds(t *testing.T) {
	if _, err := StatusEqual(pod(), node(nil)); err == nil {
		t.Error("comparing a Pod with a Node gave no error")
	}
	if _, err := StatusEqual(pod(), &unstructured.Unstructured{Object: map[string]any{}}); err == nil {
		t.Error("comparing a Pod with an unstructured object gave no error")
	}
}

// BenchmarkStatusEqual compares two Node statuses that differ in a
// heartbeat only.
func BenchmarkStatusEqual(b *testing.B) {
	x, y := node(nil), node(func(s *corev1.NodeStatus) { s.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute)) })
	b.ReportAllocs()
	for b.Loop() {
		if same, err := StatusEqual(x, y); err != nil || !same {
			b.Fatal(same, err)
		}
	}
}
