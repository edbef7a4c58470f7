package apply

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// keepImmutable copies onto desired the live values of the spec fields the
// API server never lets change after creation. Applied as desired has them,
// a value that differs would make the whole apply fail; an object another
// operator made with other values (Slinky's selector or volume claim
// templates) could then never be taken over, and a builder change to one
// of them would stop every later update. What may change is applied; what
// may not keeps its value, and the apply asserts it unchanged.
func keepImmutable(live, desired client.Object) {
	switch d := desired.(type) {
	case *appsv1.StatefulSet:
		l, ok := live.(*appsv1.StatefulSet)
		if !ok {
			return
		}
		d.Spec.Selector = l.Spec.Selector.DeepCopy()
		d.Spec.ServiceName = l.Spec.ServiceName
		d.Spec.PodManagementPolicy = l.Spec.PodManagementPolicy
		d.Spec.VolumeClaimTemplates = nil
		for i := range l.Spec.VolumeClaimTemplates {
			claim := l.Spec.VolumeClaimTemplates[i].DeepCopy()
			// The claim's status is the server's default, not the
			// template's content.
			claim.Status = corev1.PersistentVolumeClaimStatus{}
			d.Spec.VolumeClaimTemplates = append(d.Spec.VolumeClaimTemplates, *claim)
		}
	case *appsv1.Deployment:
		if l, ok := live.(*appsv1.Deployment); ok {
			d.Spec.Selector = l.Spec.Selector.DeepCopy()
		}
	}
}
