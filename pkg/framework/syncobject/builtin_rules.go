package syncobject

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// ErrImmutableField is returned when desired changes a field the API server
// never lets change (a RoleBinding's roleRef). The caller must delete and
// recreate the object; SyncObject will not do that silently.
var ErrImmutableField = errors.New("syncobject: desired changes an immutable field")

func registerBuiltins(r *Registry) {
	r.Register(&corev1.ConfigMap{}, TypedRule(syncConfigMap))
	r.Register(&corev1.Secret{}, TypedRule(syncSecret))
	r.Register(&corev1.Service{}, TypedRule(syncService))
	r.Register(&corev1.ServiceAccount{}, TypedRule(syncServiceAccount))
	r.Register(&appsv1.StatefulSet{}, TypedRule(syncStatefulSet))
	r.Register(&appsv1.Deployment{}, TypedRule(syncDeployment))
	r.Register(&policyv1.PodDisruptionBudget{}, TypedRule(syncPodDisruptionBudget))
	r.Register(&rbacv1.Role{}, TypedRule(func(e, d *rbacv1.Role) error {
		e.Rules = deepCopyRules(d.Rules)
		return nil
	}))
	r.Register(&rbacv1.ClusterRole{}, TypedRule(func(e, d *rbacv1.ClusterRole) error {
		e.Rules = deepCopyRules(d.Rules)
		if d.AggregationRule != nil {
			e.AggregationRule = d.AggregationRule.DeepCopy()
		}
		return nil
	}))
	r.Register(&rbacv1.RoleBinding{}, TypedRule(func(e, d *rbacv1.RoleBinding) error {
		return syncBinding(&e.RoleRef, &e.Subjects, d.RoleRef, d.Subjects)
	}))
	r.Register(&rbacv1.ClusterRoleBinding{}, TypedRule(func(e, d *rbacv1.ClusterRoleBinding) error {
		return syncBinding(&e.RoleRef, &e.Subjects, d.RoleRef, d.Subjects)
	}))
}

// An immutable ConfigMap or Secret is left alone entirely: its data cannot
// change, and whoever made it immutable opted out of reconciliation.
func syncConfigMap(e, d *corev1.ConfigMap) error {
	if ptr.Deref(e.Immutable, false) {
		return ErrLeaveAlone
	}
	e.Data = copyMap(d.Data)
	e.BinaryData = nil
	if len(d.BinaryData) > 0 {
		e.BinaryData = make(map[string][]byte, len(d.BinaryData))
		for k, v := range d.BinaryData {
			e.BinaryData[k] = append([]byte(nil), v...)
		}
	}
	if d.Immutable != nil {
		e.Immutable = ptr.To(*d.Immutable)
	}
	return nil
}

func syncSecret(e, d *corev1.Secret) error {
	if ptr.Deref(e.Immutable, false) {
		return ErrLeaveAlone
	}
	// The server folds stringData into data and never returns stringData, so
	// desired's stringData is folded the same way; sending it as stringData
	// would make every sync look like a change.
	data := make(map[string][]byte, len(d.Data)+len(d.StringData))
	for k, v := range d.Data {
		data[k] = append([]byte(nil), v...)
	}
	for k, v := range d.StringData {
		data[k] = []byte(v)
	}
	if len(data) == 0 {
		data = nil
	}
	e.Data = data
	if d.Type != "" {
		e.Type = d.Type
	}
	if d.Immutable != nil {
		e.Immutable = ptr.To(*d.Immutable)
	}
	return nil
}

// syncService replaces the spec but keeps what the server allocated or
// defaulted whenever desired leaves it empty: cluster IPs, IP families, node
// ports, health-check node port, and the defaulted enums. Without this every
// sync would try to clear them.
func syncService(e, d *corev1.Service) error {
	live := e.Spec
	spec := *d.Spec.DeepCopy()

	if spec.ClusterIP == "" {
		spec.ClusterIP = live.ClusterIP
	}
	if len(spec.ClusterIPs) == 0 && spec.ClusterIP == live.ClusterIP {
		spec.ClusterIPs = append([]string(nil), live.ClusterIPs...)
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = append([]corev1.IPFamily(nil), live.IPFamilies...)
	}
	if spec.IPFamilyPolicy == nil && live.IPFamilyPolicy != nil {
		spec.IPFamilyPolicy = ptr.To(*live.IPFamilyPolicy)
	}
	if spec.Type == "" {
		spec.Type = live.Type
	}
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = live.SessionAffinity
	}
	if spec.SessionAffinityConfig == nil && spec.SessionAffinity == live.SessionAffinity && live.SessionAffinityConfig != nil {
		spec.SessionAffinityConfig = live.SessionAffinityConfig.DeepCopy()
	}
	if spec.InternalTrafficPolicy == nil && live.InternalTrafficPolicy != nil {
		spec.InternalTrafficPolicy = ptr.To(*live.InternalTrafficPolicy)
	}
	if spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = live.ExternalTrafficPolicy
	}
	if spec.HealthCheckNodePort == 0 && spec.Type == corev1.ServiceTypeLoadBalancer {
		spec.HealthCheckNodePort = live.HealthCheckNodePort
	}
	if spec.AllocateLoadBalancerNodePorts == nil && live.AllocateLoadBalancerNodePorts != nil {
		spec.AllocateLoadBalancerNodePorts = ptr.To(*live.AllocateLoadBalancerNodePorts)
	}
	for i := range spec.Ports {
		lp := findServicePort(live.Ports, spec.Ports[i])
		if lp == nil {
			continue
		}
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = lp.Protocol
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = lp.TargetPort
		}
		if p.NodePort == 0 && allocatesNodePorts(spec.Type) {
			p.NodePort = lp.NodePort
		}
	}
	e.Spec = spec
	return nil
}

func allocatesNodePorts(t corev1.ServiceType) bool {
	return t == corev1.ServiceTypeNodePort || t == corev1.ServiceTypeLoadBalancer
}

// findServicePort matches by name, or by port number for unnamed ports (a
// single-port Service may leave the name empty).
func findServicePort(live []corev1.ServicePort, want corev1.ServicePort) *corev1.ServicePort {
	for i := range live {
		if live[i].Name != want.Name {
			continue
		}
		if want.Name != "" || live[i].Port == want.Port {
			return &live[i]
		}
	}
	return nil
}

func syncServiceAccount(e, d *corev1.ServiceAccount) error {
	if d.AutomountServiceAccountToken != nil {
		e.AutomountServiceAccountToken = ptr.To(*d.AutomountServiceAccountToken)
	}
	e.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), d.ImagePullSecrets...)
	if len(e.ImagePullSecrets) == 0 {
		e.ImagePullSecrets = nil
	}
	return nil
}

// statefulSetOwned is the slice of a StatefulSet spec the operator owns; the
// server defaults most of it, hence the hash-and-derivative comparison.
type statefulSetOwned struct {
	Replicas                             *int32                                                  `json:"replicas,omitempty"`
	Template                             corev1.PodTemplateSpec                                  `json:"template"`
	UpdateStrategy                       appsv1.StatefulSetUpdateStrategy                        `json:"updateStrategy"`
	MinReadySeconds                      int32                                                   `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit                 *int32                                                  `json:"revisionHistoryLimit,omitempty"`
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"pvcRetentionPolicy,omitempty"`
	Ordinals                             *appsv1.StatefulSetOrdinals                             `json:"ordinals,omitempty"`
}

func syncStatefulSet(e, d *appsv1.StatefulSet) error {
	owned := func(s *appsv1.StatefulSetSpec) statefulSetOwned {
		return statefulSetOwned{s.Replicas, s.Template, s.UpdateStrategy, s.MinReadySeconds,
			s.RevisionHistoryLimit, s.PersistentVolumeClaimRetentionPolicy, s.Ordinals}
	}
	return replaceOwned(e, owned(&d.Spec), owned(&e.Spec), func() {
		src := d.Spec.DeepCopy()
		e.Spec.Replicas = src.Replicas
		e.Spec.Template = src.Template
		e.Spec.UpdateStrategy = src.UpdateStrategy
		e.Spec.MinReadySeconds = src.MinReadySeconds
		e.Spec.RevisionHistoryLimit = src.RevisionHistoryLimit
		e.Spec.PersistentVolumeClaimRetentionPolicy = src.PersistentVolumeClaimRetentionPolicy
		e.Spec.Ordinals = src.Ordinals
	})
}

type deploymentOwned struct {
	Replicas             *int32                    `json:"replicas,omitempty"`
	Template             corev1.PodTemplateSpec    `json:"template"`
	Strategy             appsv1.DeploymentStrategy `json:"strategy"`
	MinReadySeconds      int32                     `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit *int32                    `json:"revisionHistoryLimit,omitempty"`
}

func syncDeployment(e, d *appsv1.Deployment) error {
	owned := func(s *appsv1.DeploymentSpec) deploymentOwned {
		return deploymentOwned{s.Replicas, s.Template, s.Strategy, s.MinReadySeconds, s.RevisionHistoryLimit}
	}
	return replaceOwned(e, owned(&d.Spec), owned(&e.Spec), func() {
		src := d.Spec.DeepCopy()
		e.Spec.Replicas = src.Replicas
		e.Spec.Template = src.Template
		e.Spec.Strategy = src.Strategy
		e.Spec.MinReadySeconds = src.MinReadySeconds
		e.Spec.RevisionHistoryLimit = src.RevisionHistoryLimit
	})
}

// The budget fields are replaced together so switching from minAvailable to
// maxUnavailable clears the old one (the server rejects both set).
func syncPodDisruptionBudget(e, d *policyv1.PodDisruptionBudget) error {
	src := d.Spec.DeepCopy()
	e.Spec.Selector = src.Selector
	e.Spec.MinAvailable = src.MinAvailable
	e.Spec.MaxUnavailable = src.MaxUnavailable
	if src.UnhealthyPodEvictionPolicy != nil {
		e.Spec.UnhealthyPodEvictionPolicy = src.UnhealthyPodEvictionPolicy
	}
	return nil
}

// syncBinding replaces subjects; roleRef is immutable in the API, so a
// changed roleRef is reported instead of producing a patch the server rejects.
// Subjects are compared with Derivative because the server defaults
// apiGroup for User and Group subjects.
func syncBinding(eRef *rbacv1.RoleRef, eSubjects *[]rbacv1.Subject, dRef rbacv1.RoleRef, dSubjects []rbacv1.Subject) error {
	if !Derivative(dRef, *eRef) {
		return fmt.Errorf("%w: roleRef %s/%s -> %s/%s", ErrImmutableField, eRef.Kind, eRef.Name, dRef.Kind, dRef.Name)
	}
	if len(dSubjects) == len(*eSubjects) && Derivative(dSubjects, *eSubjects) {
		return nil
	}
	*eSubjects = append([]rbacv1.Subject(nil), dSubjects...)
	return nil
}

func deepCopyRules(in []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	if in == nil {
		return nil
	}
	out := make([]rbacv1.PolicyRule, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
