package testutil

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// DaemonSet puts the NodeSet in DaemonSet scaling mode.
func (w *NodeSetWrapper) DaemonSet() *NodeSetWrapper {
	w.Spec.ScalingMode = slinkyv1beta1.ScalingModeDaemonset
	return w
}

// NodeSelector sets the pod template's node selector.
func (w *NodeSetWrapper) NodeSelector(labels map[string]string) *NodeSetWrapper {
	w.Spec.Template.Spec.NodeSelector = labels
	return w
}

// Tolerate adds a toleration to the pod template.
func (w *NodeSetWrapper) Tolerate(t corev1.Toleration) *NodeSetWrapper {
	w.Spec.Template.Spec.Tolerations = append(w.Spec.Template.Spec.Tolerations, t)
	return w
}

// NodeWrapper builds a Kubernetes Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode starts a Node with no labels, taints or annotations.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Obj returns a copy of the built object.
func (w *NodeWrapper) Obj() *corev1.Node { return w.DeepCopy() }

// Label sets a label.
func (w *NodeWrapper) Label(k, v string) *NodeWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Annotate sets an annotation.
func (w *NodeWrapper) Annotate(k, v string) *NodeWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// Taint adds a taint.
func (w *NodeWrapper) Taint(key, value string, effect corev1.TaintEffect) *NodeWrapper {
	w.Spec.Taints = append(w.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return w
}

// Cordon marks the Node unschedulable.
func (w *NodeWrapper) Cordon() *NodeWrapper {
	w.Spec.Unschedulable = true
	return w
}
