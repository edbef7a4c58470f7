package service

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// Params describe a daemon's Service: the operator's port and selector,
// and the user's customisation from the CR.
type Params struct {
	Meta     metav1.ObjectMeta
	User     slinkyv1beta1.ServiceSpec
	Selector map[string]string
	// PortName is both the Service port's name and the container port it targets.
	PortName string
	Port     int32
}

// New builds a client Service: the user's spec (type, extra ports, ...)
// with the operator's selector and daemon port on top, without external
// IPs.
// spec.service.port and spec.service.nodePort override the port numbers.
func New(p Params) *corev1.Service {
	spec := p.User.Spec.ServiceSpec.DeepCopy()
	port := corev1.ServicePort{
		Name:       p.PortName,
		Protocol:   corev1.ProtocolTCP,
		Port:       p.Port,
		TargetPort: intstr.FromString(p.PortName),
	}
	if p.User.Port != 0 {
		port.Port = int32(p.User.Port)
	}
	// The API server rejects a nodePort on a ClusterIP Service.
	if p.User.NodePort != 0 && (spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer) {
		port.NodePort = int32(p.User.NodePort)
	}
	ports := []corev1.ServicePort{port}
	for _, up := range spec.Ports {
		if up.Name != port.Name {
			ports = append(ports, up)
		}
	}
	svc := builder.Service(builder.ServiceOptions{
		Meta:     serviceMeta(p),
		Type:     spec.Type,
		Selector: builder.MergeLabels(spec.Selector, p.Selector),
		Ports:    ports,
	})
	// Keep every other user setting; the builder only set the fields above.
	spec.Type, spec.Selector, spec.Ports = svc.Spec.Type, svc.Spec.Selector, svc.Spec.Ports
	// No external IPs, as in Slinky v1.2.1 (CVE-2020-8554: they capture
	// the traffic of whoever owns those addresses); admission warns.
	spec.ExternalIPs = nil
	svc.Spec = *spec
	return svc
}

// NewHeadless builds the governing Service of a StatefulSet. The user's
// spec is not applied: a type or cluster IP from it would break the
// per-pod DNS names the daemons rely on. Not-ready addresses are published
// because a daemon resolves its own configured host name while starting,
// before it can be ready.
func NewHeadless(p Params) *corev1.Service {
	return builder.HeadlessService(builder.ServiceOptions{
		Meta:     serviceMeta(p),
		Selector: p.Selector,
		Ports: []corev1.ServicePort{{
			Name:       p.PortName,
			Protocol:   corev1.ProtocolTCP,
			Port:       p.Port,
			TargetPort: intstr.FromString(p.PortName),
		}},
		PublishNotReadyAddresses: true,
	})
}

func serviceMeta(p Params) metav1.ObjectMeta {
	meta := *p.Meta.DeepCopy()
	meta.Labels = builder.MergeLabels(p.User.Metadata.Labels, meta.Labels)
	meta.Annotations = builder.MergeLabels(p.User.Metadata.Annotations, meta.Annotations)
	return meta
}
