package slinkytesting

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// RestApiWrapper builds a RestApi.
type RestApiWrapper struct{ slinkyv1beta1.RestApi }

// MakeRestApi starts a RestApi serving controller.
func MakeRestApi(name, ns, controller string) *RestApiWrapper {
	return &RestApiWrapper{slinkyv1beta1.RestApi{
		TypeMeta:   metav1.TypeMeta{APIVersion: slinkyv1beta1.GroupVersion.String(), Kind: slinkyv1beta1.RestApiKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       slinkyv1beta1.RestApiSpec{ControllerRef: corev1.LocalObjectReference{Name: controller}},
	}}
}

// Obj returns a copy of the built object.
func (w *RestApiWrapper) Obj() *slinkyv1beta1.RestApi { return w.DeepCopy() }

// Clone returns a copy of the wrapper, to vary a common base.
func (w *RestApiWrapper) Clone() *RestApiWrapper { return &RestApiWrapper{*w.RestApi.DeepCopy()} }

// UID sets the UID, which owner references need outside an API server.
func (w *RestApiWrapper) UID(uid string) *RestApiWrapper {
	w.ObjectMeta.UID = types.UID(uid)
	return w
}

// Replicas sets spec.replicas.
func (w *RestApiWrapper) Replicas(n int32) *RestApiWrapper {
	w.Spec.Replicas = ptr.To(n)
	return w
}

// Image sets the slurmrestd image.
func (w *RestApiWrapper) Image(image string) *RestApiWrapper {
	w.Spec.Slurmrestd.Image = image
	return w
}

// Args overrides slurmrestd's arguments.
func (w *RestApiWrapper) Args(args ...string) *RestApiWrapper {
	w.Spec.Slurmrestd.Args = args
	return w
}

// Port sets the Service port.
func (w *RestApiWrapper) Port(p int) *RestApiWrapper {
	w.Spec.Service.Port = p
	return w
}
