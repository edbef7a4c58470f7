// Package testutil builds Slinky objects for tests with small fluent
// wrappers, so a test states only what it is about:
//
//	testutil.MakeController("slurm", "ns").SlurmKey("keys", "slurm.key").Obj()
package testutil

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// ControllerWrapper builds a Controller.
type ControllerWrapper struct{ slinkyv1beta1.Controller }

// MakeController starts a Controller with no keys and persistence enabled
// (the API default).
func MakeController(name, ns string) *ControllerWrapper {
	return &ControllerWrapper{slinkyv1beta1.Controller{
		TypeMeta:   metav1.TypeMeta{APIVersion: slinkyv1beta1.GroupVersion.String(), Kind: slinkyv1beta1.ControllerKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns a copy of the built object.
func (w *ControllerWrapper) Obj() *slinkyv1beta1.Controller { return w.DeepCopy() }

// UID sets the UID, which owner references need outside an API server.
func (w *ControllerWrapper) UID(uid string) *ControllerWrapper {
	w.ObjectMeta.UID = types.UID(uid)
	return w
}

// Label sets a label on the Controller itself.
func (w *ControllerWrapper) Label(k, v string) *ControllerWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// SlurmKey selects the auth/slurm key.
func (w *ControllerWrapper) SlurmKey(secret, key string) *ControllerWrapper {
	w.Spec.SlurmKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}
	return w
}

// JwtKey selects the auth/jwt key.
func (w *ControllerWrapper) JwtKey(secret, key string) *ControllerWrapper {
	w.Spec.JwtKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}
	return w
}

// JwtHs256Key selects the auth/jwt key through the deprecated field.
func (w *ControllerWrapper) JwtHs256Key(secret, key string) *ControllerWrapper {
	w.Spec.JwtHs256KeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}
	return w
}

// Jwks selects a JWKS document.
func (w *ControllerWrapper) Jwks(configMap, key string) *ControllerWrapper {
	w.Spec.JwksKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: key}
	return w
}

// Keys sets both keys from one Secret, the common layout.
func (w *ControllerWrapper) Keys(secret string) *ControllerWrapper {
	return w.SlurmKey(secret, "slurm.key").JwtKey(secret, "jwt.key")
}

// ClusterName sets spec.clusterName.
func (w *ControllerWrapper) ClusterName(n string) *ControllerWrapper {
	w.Spec.ClusterName = n
	return w
}

// ExtraConf sets spec.extraConf.
func (w *ControllerWrapper) ExtraConf(s string) *ControllerWrapper {
	w.Spec.ExtraConf = s
	return w
}

// Persistence enables or disables the state volume.
func (w *ControllerWrapper) Persistence(enabled bool) *ControllerWrapper {
	w.Spec.Persistence.Enabled = ptr.To(enabled)
	return w
}

// ExistingClaim keeps state on an existing claim.
func (w *ControllerWrapper) ExistingClaim(name string) *ControllerWrapper {
	w.Spec.Persistence.ExistingClaim = name
	return w
}

// External describes a slurmctld outside Kubernetes.
func (w *ControllerWrapper) External(host string, port int) *ControllerWrapper {
	w.Spec.External = true
	w.Spec.ExternalConfig = &slinkyv1beta1.ExternalConfig{Host: host, Port: port}
	return w
}

// Image sets the slurmctld image.
func (w *ControllerWrapper) Image(image string) *ControllerWrapper {
	w.Spec.Slurmctld.Image = image
	return w
}

// Accounting names the Accounting the cluster reports to.
func (w *ControllerWrapper) Accounting(name string) *ControllerWrapper {
	w.Spec.AccountingRef = &corev1.LocalObjectReference{Name: name}
	return w
}

// Metrics turns on slurmctld's OpenMetrics endpoint.
func (w *ControllerWrapper) Metrics() *ControllerWrapper {
	w.Spec.Metrics.Enabled = true
	return w
}

// ConfigFiles adds ConfigMaps of extra files for /etc/slurm.
func (w *ControllerWrapper) ConfigFiles(names ...string) *ControllerWrapper {
	w.Spec.ConfigFileRefs = append(w.Spec.ConfigFileRefs, localRefs(names)...)
	return w
}

// PrologScripts adds ConfigMaps of Prolog scripts.
func (w *ControllerWrapper) PrologScripts(names ...string) *ControllerWrapper {
	w.Spec.PrologScriptRefs = append(w.Spec.PrologScriptRefs, localRefs(names)...)
	return w
}

// EpilogSlurmctldScripts adds ConfigMaps of EpilogSlurmctld scripts.
func (w *ControllerWrapper) EpilogSlurmctldScripts(names ...string) *ControllerWrapper {
	w.Spec.EpilogSlurmctldScriptRefs = append(w.Spec.EpilogSlurmctldScriptRefs, localRefs(names)...)
	return w
}

// PodLabel adds a label to the slurmctld pod template.
func (w *ControllerWrapper) PodLabel(k, v string) *ControllerWrapper {
	if w.Spec.Template.Metadata.Labels == nil {
		w.Spec.Template.Metadata.Labels = map[string]string{}
	}
	w.Spec.Template.Metadata.Labels[k] = v
	return w
}

// ServiceType sets the client Service's type and node port.
func (w *ControllerWrapper) ServiceType(t corev1.ServiceType, nodePort int) *ControllerWrapper {
	w.Spec.Service.Spec.Type = t
	w.Spec.Service.NodePort = nodePort
	return w
}

func localRefs(names []string) []corev1.LocalObjectReference {
	out := make([]corev1.LocalObjectReference, 0, len(names))
	for _, n := range names {
		out = append(out, corev1.LocalObjectReference{Name: n})
	}
	return out
}

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

// MakeSecret builds a Secret holding data.
func MakeSecret(name, ns string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// MakeConfigMap builds a ConfigMap holding data.
func MakeConfigMap(name, ns string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
}
