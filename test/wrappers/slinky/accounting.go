package slinkytesting

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// AccountingWrapper builds an Accounting.
type AccountingWrapper struct{ slinkyv1beta1.Accounting }

// MakeAccounting starts an Accounting with no keys and no database.
func MakeAccounting(name, ns string) *AccountingWrapper {
	return &AccountingWrapper{slinkyv1beta1.Accounting{
		TypeMeta:   metav1.TypeMeta{APIVersion: slinkyv1beta1.GroupVersion.String(), Kind: slinkyv1beta1.AccountingKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns a copy of the built object.
func (w *AccountingWrapper) Obj() *slinkyv1beta1.Accounting { return w.DeepCopy() }

// Clone returns a copy of the wrapper, to vary a common base.
func (w *AccountingWrapper) Clone() *AccountingWrapper {
	return &AccountingWrapper{*w.Accounting.DeepCopy()}
}

// UID sets the UID, which owner references need outside an API server.
func (w *AccountingWrapper) UID(uid string) *AccountingWrapper {
	w.ObjectMeta.UID = types.UID(uid)
	return w
}

// Keys selects slurm.key and jwt.key from one Secret, as Keys does for a
// Controller.
func (w *AccountingWrapper) Keys(secret string) *AccountingWrapper {
	w.Spec.SlurmKeyRef = secretKey(secret, "slurm.key")
	w.Spec.JwtKeyRef = secretKey(secret, "jwt.key")
	return w
}

// Jwks selects a JWKS document.
func (w *AccountingWrapper) Jwks(configMap, key string) *AccountingWrapper {
	w.Spec.JwksKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: key}
	return w
}

// Storage sets the database's host, port (0: default), user and password
// Secret key.
func (w *AccountingWrapper) Storage(host string, port int, user, passwordSecret, passwordKey string) *AccountingWrapper {
	w.Spec.StorageConfig = slinkyv1beta1.StorageConfig{
		Host: host, Port: port, Username: user,
		PasswordKeyRef: *secretKey(passwordSecret, passwordKey),
	}
	return w
}

// Database sets storageConfig.database.
func (w *AccountingWrapper) Database(db string) *AccountingWrapper {
	w.Spec.StorageConfig.Database = db
	return w
}

// ExtraConf sets the slurmdbd.conf snippet.
func (w *AccountingWrapper) ExtraConf(s string) *AccountingWrapper {
	w.Spec.ExtraConf = s
	return w
}

// External marks slurmdbd as running outside Kubernetes at host:port.
func (w *AccountingWrapper) External(host string, port int) *AccountingWrapper {
	w.Spec.External = true
	w.Spec.ExternalConfig = &slinkyv1beta1.ExternalConfig{Host: host, Port: port}
	return w
}

// ServicePort overrides the Service's port.
func (w *AccountingWrapper) ServicePort(p int) *AccountingWrapper {
	w.Spec.Service.Port = p
	return w
}

// Image sets the slurmdbd image.
func (w *AccountingWrapper) Image(image string) *AccountingWrapper {
	w.Spec.Slurmdbd.Image = image
	return w
}

func secretKey(secret, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}
}
