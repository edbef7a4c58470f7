package builder

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// MetadataBuilder accumulates ObjectMeta. Every With* copies its input, so the
// built ObjectMeta never aliases a caller's map.
type MetadataBuilder struct {
	meta metav1.ObjectMeta
}

// NewMetadata starts ObjectMeta for name in namespace ns, already carrying
// the managed-by label every Gantry object has.
func NewMetadata(name, ns string) *MetadataBuilder {
	return &MetadataBuilder{meta: metav1.ObjectMeta{
		Name:      name,
		Namespace: ns,
		Labels:    map[string]string{LabelManagedBy: ManagedByGantry},
	}}
}

// WithLabels adds labels; later calls win on equal keys.
func (b *MetadataBuilder) WithLabels(labels map[string]string) *MetadataBuilder {
	b.meta.Labels = MergeLabels(b.meta.Labels, labels)
	return b
}

// WithAnnotations adds annotations; later calls win on equal keys.
func (b *MetadataBuilder) WithAnnotations(annotations map[string]string) *MetadataBuilder {
	b.meta.Annotations = MergeLabels(b.meta.Annotations, annotations)
	return b
}

// WithOwner makes owner (of kind gvk) the controller of the object, with
// blockOwnerDeletion so foreground deletion waits for it.
func (b *MetadataBuilder) WithOwner(owner metav1.Object, gvk schema.GroupVersionKind) *MetadataBuilder {
	ref := metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
	for i := range b.meta.OwnerReferences {
		if b.meta.OwnerReferences[i].UID == ref.UID {
			b.meta.OwnerReferences[i] = ref
			return b
		}
	}
	b.meta.OwnerReferences = append(b.meta.OwnerReferences, ref)
	return b
}

// Build returns a copy of the accumulated metadata; the builder can go on.
func (b *MetadataBuilder) Build() metav1.ObjectMeta {
	return *b.meta.DeepCopy()
}

// MergeLabels returns a new map holding user's entries overlaid by owned's:
// operator-owned keys win because selectors and ownership depend on them.
// Neither input is modified. The result is nil only when both are empty.
func MergeLabels(user, owned map[string]string) map[string]string {
	if len(user) == 0 && len(owned) == 0 {
		return nil
	}
	out := make(map[string]string, len(user)+len(owned))
	for k, v := range user {
		out[k] = v
	}
	for k, v := range owned {
		out[k] = v
	}
	return out
}

// SelectorLabels are the stable labels selecting one component of one
// instance. They never include values that change across upgrades (versions),
// because selectors of StatefulSets and Deployments are immutable.
func SelectorLabels(name, instance, component string) map[string]string {
	l := map[string]string{LabelName: name, LabelInstance: instance}
	if component != "" {
		l[LabelComponent] = component
	}
	return l
}
