package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestSpecChangedIgnoresStatusWrites(t *testing.T) {
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "a", Generation: 3, ResourceVersion: "10",
		Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "1"},
	}}
	change := func(edit func(*corev1.ConfigMap)) bool {
		updated := old.DeepCopy()
		updated.ResourceVersion = "11"
		edit(updated)
		return SpecChanged.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated})
	}
	if change(func(*corev1.ConfigMap) {}) {
		t.Error("a write that changed only the resourceVersion (a status write) passed")
	}
	for name, edit := range map[string]func(*corev1.ConfigMap){
		"generation": func(c *corev1.ConfigMap) { c.Generation++ },
		"label":      func(c *corev1.ConfigMap) { c.Labels["l"] = "2" },
		"annotation": func(c *corev1.ConfigMap) { c.Annotations["b"] = "1" },
	} {
		if !change(edit) {
			t.Errorf("a %s change did not pass", name)
		}
	}
}
