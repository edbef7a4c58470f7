// Package slinkytesting builds Slinky objects (and the Kubernetes objects
// their tests need beside them) with small fluent wrappers, so a test
// states only what it is about:
//
//	MakeController("slurm", "ns").SlurmKey("keys", "slurm.key").Obj()
//	MakeNodeSet("cpu", "ns", "slurm").Partition("").DaemonSet().Obj()
//
// Obj returns a copy of the object built so far; Clone copies a wrapper to
// vary a common base.
package slinkytesting

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

// Clone returns a copy of the wrapper, to vary a common base.
func (w *ControllerWrapper) Clone() *ControllerWrapper {
	return &ControllerWrapper{*w.Controller.DeepCopy()}
}

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
