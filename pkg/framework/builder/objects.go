package builder

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ServiceOptions describe a Service. Fields the API server allocates or
// defaults (cluster IP, node ports, IP families) are deliberately absent:
// an apply that does not set them leaves the allocated values alone.
type ServiceOptions struct {
	Meta     metav1.ObjectMeta
	Type     corev1.ServiceType
	Selector map[string]string
	Ports    []corev1.ServicePort
	// PublishNotReadyAddresses publishes pods before they are ready, needed
	// for peers that must find each other while starting (a head and its
	// workers, a controller daemon and its nodes).
	PublishNotReadyAddresses bool
}

// Service builds a Service from opts without aliasing any of its maps or
// slices.
func Service(opts ServiceOptions) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: *opts.Meta.DeepCopy(),
		Spec: corev1.ServiceSpec{
			Type:                     opts.Type,
			Selector:                 copyStrings(opts.Selector),
			PublishNotReadyAddresses: opts.PublishNotReadyAddresses,
		},
	}
	for _, p := range opts.Ports {
		svc.Spec.Ports = append(svc.Spec.Ports, *p.DeepCopy())
	}
	return svc
}

// HeadlessService builds a headless Service (clusterIP None), which gives
// every selected pod a stable DNS name; Type is forced to ClusterIP because
// headless is only valid there.
func HeadlessService(opts ServiceOptions) *corev1.Service {
	opts.Type = corev1.ServiceTypeClusterIP
	svc := Service(opts)
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	return svc
}

// PodDisruptionBudget builds a PDB with exactly one of minAvailable and
// maxUnavailable set; when both are given maxUnavailable is dropped, since
// the API rejects both.
func PodDisruptionBudget(meta metav1.ObjectMeta, selector map[string]string, minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: *meta.DeepCopy(),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: copyStrings(selector)},
		},
	}
	switch {
	case minAvailable != nil:
		v := *minAvailable
		pdb.Spec.MinAvailable = &v
	case maxUnavailable != nil:
		v := *maxUnavailable
		pdb.Spec.MaxUnavailable = &v
	}
	return pdb
}

// ConfigMap builds a ConfigMap holding a copy of data.
func ConfigMap(meta metav1.ObjectMeta, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: *meta.DeepCopy(),
		Data:       copyStrings(data),
	}
}

func copyStrings(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
