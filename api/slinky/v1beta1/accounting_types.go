package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AccountingKind is the kind of the slurmdbd resource.
const AccountingKind = "Accounting"

// AccountingGVK is the group/version/kind of Accounting.
var AccountingGVK = GroupVersion.WithKind(AccountingKind)

// Accounting defaults, as Slinky sets them.
const (
	// DefaultAccountingStoragePort is MariaDB's (and MySQL's) port.
	DefaultAccountingStoragePort = 3306
	// DefaultAccountingStorageDatabase is the database slurmdbd writes to.
	DefaultAccountingStorageDatabase = "slurm_acct_db"
)

// AccountingSpec is the desired state of a Slurm database daemon
// (slurmdbd), which keeps the job and usage records of the Controllers that
// reference it in a MariaDB or MySQL database.
//
// The key references are needed only when slurmdbd runs in Kubernetes: an
// external slurmdbd brings its own keys.
// +kubebuilder:validation:XValidation:rule="(has(self.external) && self.external) || has(self.slurmKeyRef)",message="slurmKeyRef must be set when external is false"
// +kubebuilder:validation:XValidation:rule="(has(self.external) && self.external) || has(self.jwtKeyRef) || has(self.jwtHs256KeyRef)",message="jwtKeyRef or jwtHs256KeyRef must be set when external is false"
// +kubebuilder:validation:XValidation:rule="!(has(self.external) && self.external) || has(self.externalConfig)",message="externalConfig must be set when external is true"
type AccountingSpec struct {
	// SlurmKeyRef selects the auth/slurm key slurmdbd shares with slurmctld
	// (the Controller's slurmKeyRef).
	// +optional
	SlurmKeyRef *corev1.SecretKeySelector `json:"slurmKeyRef,omitempty"`

	// JwtHs256KeyRef selects the auth/jwt HS256 key.
	//
	// Deprecated: use JwtKeyRef; it wins when both are set.
	// +optional
	JwtHs256KeyRef *corev1.SecretKeySelector `json:"jwtHs256KeyRef,omitempty"`

	// JwtKeyRef selects the auth/jwt key (the Controller's jwtKeyRef), with
	// which slurmdbd verifies the tokens of slurmrestd's clients.
	// +optional
	JwtKeyRef *corev1.SecretKeySelector `json:"jwtKeyRef,omitempty"`

	// JwksKeyRef selects a JWKS document for auth/jwt.
	// +optional
	JwksKeyRef *corev1.ConfigMapKeySelector `json:"jwksKeyRef,omitempty"`

	// External marks a slurmdbd that runs outside Kubernetes: nothing is
	// created for it, and the Controllers that reference this Accounting
	// send their records to ExternalConfig's host and port.
	// +optional
	// +kubebuilder:default=false
	External bool `json:"external,omitempty"`

	// ExternalConfig locates the external slurmdbd.
	// +optional
	ExternalConfig *ExternalConfig `json:"externalConfig,omitempty"`

	// Slurmdbd overrides the slurmdbd container (image, resources, ...).
	// +optional
	Slurmdbd ContainerWrapper `json:"slurmdbd,omitzero"`

	// Template is merged into the slurmdbd pod.
	// +optional
	Template PodTemplate `json:"template,omitzero"`

	// StorageConfig is how slurmdbd reaches its MariaDB or MySQL database.
	// Required unless external is true.
	// +optional
	StorageConfig StorageConfig `json:"storageConfig,omitzero"`

	// ExtraConf is appended to slurmdbd.conf
	// (https://slurm.schedmd.com/slurmdbd.conf.html); a parameter set here
	// wins over the operator's, since slurmdbd keeps the last declaration.
	// +optional
	ExtraConf string `json:"extraConf,omitempty"`

	// Service customises the slurmdbd Service.
	// +optional
	Service ServiceSpec `json:"service,omitzero"`
}

// StorageConfig is slurmdbd's access to its database.
type StorageConfig struct {
	// Host is the name or address of the database server (slurmdbd.conf
	// StorageHost).
	// +required
	Host string `json:"host"`

	// Port is the database server's port (StoragePort, default 3306).
	// +optional
	// +kubebuilder:default=3306
	Port int `json:"port,omitempty"`

	// Database is the database the records are written to (StorageLoc,
	// default "slurm_acct_db").
	// +optional
	// +kubebuilder:default="slurm_acct_db"
	Database string `json:"database,omitempty"`

	// Username is the database user slurmdbd connects as (StorageUser).
	// +optional
	Username string `json:"username,omitempty"`

	// PasswordKeyRef selects the Secret key holding that user's password
	// (StoragePass).
	// +required
	PasswordKeyRef corev1.SecretKeySelector `json:"passwordKeyRef"`
}

// AccountingStatus is the observed state of an Accounting.
type AccountingStatus struct {
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// Accounting runs a Slurm database daemon (slurmdbd), or describes an
// external one, for the Controllers whose accountingRef names it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=slurmdbd
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type Accounting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AccountingSpec   `json:"spec,omitempty"`
	Status AccountingStatus `json:"status,omitempty"`
}

// AccountingList is a list of Accountings.
// +kubebuilder:object:root=true
type AccountingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Accounting `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Accounting{}, &AccountingList{})
}

// EffectiveJwtKeyRef is the auth/jwt key: jwtKeyRef, else the deprecated
// jwtHs256KeyRef, else nil.
func (s *AccountingSpec) EffectiveJwtKeyRef() *corev1.SecretKeySelector {
	if s.JwtKeyRef != nil {
		return s.JwtKeyRef
	}
	return s.JwtHs256KeyRef
}

// PortOrDefault is StoragePort: port, else 3306.
func (s *StorageConfig) PortOrDefault() int {
	if s.Port == 0 {
		return DefaultAccountingStoragePort
	}
	return s.Port
}

// DatabaseOrDefault is StorageLoc: database, else "slurm_acct_db".
func (s *StorageConfig) DatabaseOrDefault() string {
	if s.Database == "" {
		return DefaultAccountingStorageDatabase
	}
	return s.Database
}
