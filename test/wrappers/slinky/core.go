package slinkytesting

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeWrapper builds a Kubernetes Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode starts a Node with no labels, taints or annotations.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Obj returns a copy of the built object.
func (w *NodeWrapper) Obj() *corev1.Node { return w.DeepCopy() }

// Clone returns a copy of the wrapper, to vary a common base.
func (w *NodeWrapper) Clone() *NodeWrapper { return &NodeWrapper{*w.Node.DeepCopy()} }

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

// SecretWrapper builds a Secret.
type SecretWrapper struct{ corev1.Secret }

// MakeSecret starts a Secret holding data.
func MakeSecret(name, ns string, data map[string]string) *SecretWrapper {
	s := &SecretWrapper{corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{}}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// Obj returns a copy of the built object.
func (w *SecretWrapper) Obj() *corev1.Secret { return w.DeepCopy() }

// Clone returns a copy of the wrapper, to vary a common base.
func (w *SecretWrapper) Clone() *SecretWrapper { return &SecretWrapper{*w.Secret.DeepCopy()} }
