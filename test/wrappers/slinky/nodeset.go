package slinkytesting

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// NodeSetWrapper builds a NodeSet.
type NodeSetWrapper struct{ slinkyv1beta1.NodeSet }

// MakeNodeSet starts a NodeSet of one replica belonging to controller (same
// namespace).
func MakeNodeSet(name, ns, controller string) *NodeSetWrapper {
	return &NodeSetWrapper{slinkyv1beta1.NodeSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: slinkyv1beta1.GroupVersion.String(), Kind: slinkyv1beta1.NodeSetKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: slinkyv1beta1.NodeSetSpec{
			ControllerRef: slinkyv1beta1.ObjectReference{Name: controller},
			Replicas:      ptr.To[int32](1),
		},
	}}
}

// Obj returns a copy of the built object.
func (w *NodeSetWrapper) Obj() *slinkyv1beta1.NodeSet { return w.DeepCopy() }

// Clone returns a copy of the wrapper, to vary a common base.
func (w *NodeSetWrapper) Clone() *NodeSetWrapper { return &NodeSetWrapper{*w.NodeSet.DeepCopy()} }

// ControllerNamespace points the controller reference at another namespace.
func (w *NodeSetWrapper) ControllerNamespace(ns string) *NodeSetWrapper {
	w.Spec.ControllerRef.Namespace = ns
	return w
}

// Partition enables the NodeSet's partition with config appended to its line.
func (w *NodeSetWrapper) Partition(config string) *NodeSetWrapper {
	w.Spec.Partition = slinkyv1beta1.NodeSetPartition{Enabled: true, Config: config}
	return w
}

// Hostname sets the pod hostname prefix, which renames the Slurm NodeSet.
func (w *NodeSetWrapper) Hostname(h string) *NodeSetWrapper {
	w.Spec.Template.Spec.Hostname = h
	return w
}

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

// Ssh sets the NodeSet's spec.ssh.
func (w *NodeSetWrapper) Ssh(ssh slinkyv1beta1.NodeSetSsh) *NodeSetWrapper {
	w.Spec.Ssh = ssh
	return w
}

// PruneNodeNotFound sets pruneSlurmNodeRecords to NodeNotFound.
func (w *NodeSetWrapper) PruneNodeNotFound() *NodeSetWrapper {
	w.Spec.PruneSlurmNodeRecords = slinkyv1beta1.NodeSetPruneNodeRecordTypeNodeNotFound
	return w
}
