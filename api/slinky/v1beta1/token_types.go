package v1beta1

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TokenKind is the kind of the Slurm JWT resource.
const TokenKind = "Token"

// TokenGVK is the group/version/kind of Token.
var TokenGVK = GroupVersion.WithKind(TokenKind)

// Token defaults, as Slinky sets them.
const (
	// DefaultTokenLifetime is how long a JWT is valid when lifetime is unset.
	DefaultTokenLifetime = 15 * time.Minute
	// DefaultTokenUsername is the user of a Token that names none.
	DefaultTokenUsername = "nobody"
	// DefaultTokenSecretKey is the key of the JWT in its Secret.
	DefaultTokenSecretKey = "SLURM_JWT"
)

// TokenSpec is the desired state of a Slurm JWT kept in a Secret, e.g. for
// clients that submit jobs through slurmrestd.
// +kubebuilder:validation:XValidation:rule="has(self.jwtKeyRef) || has(self.jwtHs256KeyRef)", message="jwtKeyRef or jwtHs256KeyRef must be set"
type TokenSpec struct {
	// JwtHs256KeyRef is the HS256 key (Slurm's auth/jwt key) the token is
	// signed with.
	//
	// Deprecated: use jwtKeyRef.
	// +optional
	JwtHs256KeyRef *corev1.SecretKeySelector `json:"jwtHs256KeyRef,omitempty"`

	// JwtKeyRef is the HS256 key (Slurm's auth/jwt key, the Controller's
	// jwtKeyRef) the token is signed with.
	// +optional
	JwtKeyRef *corev1.SecretKeySelector `json:"jwtKeyRef,omitempty"`

	// Username is the Slurm user the token authenticates ("nobody" when
	// empty).
	// +required
	Username string `json:"username,omitzero"`

	// Lifetime is how long each token is valid (default 15m).
	// +optional
	Lifetime *metav1.Duration `json:"lifetime,omitempty"`

	// Refresh replaces the token before it expires (at 80% of its
	// lifetime). When false, one token is issued into an immutable Secret
	// and never replaced.
	// +optional
	// +kubebuilder:default=true
	Refresh *bool `json:"refresh,omitzero"`

	// SecretRef names the Secret and key that hold the token (default: the
	// Secret <name>-jwt-<username>, key SLURM_JWT).
	// +optional
	SecretRef *corev1.SecretKeySelector `json:"secretRef,omitempty"`
}

// TokenStatus is the observed state of a Token.
type TokenStatus struct {
	// IssuedAt is when the token in the Secret was issued.
	// +optional
	IssuedAt *metav1.Time `json:"issuedAt,omitempty"`

	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// Token keeps a Slurm JWT for a user in a Secret, renewed before it expires.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tokens;jwt
// +kubebuilder:printcolumn:name="USER",type="string",JSONPath=".spec.username",description="The user the JWT authenticates."
// +kubebuilder:printcolumn:name="IAT",type="date",JSONPath=".status.issuedAt",description="When the JWT was issued."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type Token struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TokenSpec   `json:"spec,omitempty"`
	Status TokenStatus `json:"status,omitempty"`
}

// TokenList is a list of Tokens.
// +kubebuilder:object:root=true
type TokenList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Token `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Token{}, &TokenList{})
}

// UsernameOrDefault is the Slurm user of the token.
func (t *Token) UsernameOrDefault() string {
	if t.Spec.Username == "" {
		return DefaultTokenUsername
	}
	return t.Spec.Username
}

// LifetimeOrDefault is how long each token is valid.
func (t *Token) LifetimeOrDefault() time.Duration {
	if t.Spec.Lifetime != nil && t.Spec.Lifetime.Duration > 0 {
		return t.Spec.Lifetime.Duration
	}
	return DefaultTokenLifetime
}

// SigningKeyRef is the key the token is signed with: jwtKeyRef, else the
// deprecated jwtHs256KeyRef.
func (t *Token) SigningKeyRef() *corev1.SecretKeySelector {
	if t.Spec.JwtKeyRef != nil {
		return t.Spec.JwtKeyRef
	}
	return t.Spec.JwtHs256KeyRef
}

// TokenSecretRef is where the token is kept: spec.secretRef, else the
// Secret <name>-jwt-<username> under key SLURM_JWT (Slinky's names).
func (t *Token) TokenSecretRef() corev1.SecretKeySelector {
	if t.Spec.SecretRef != nil {
		ref := *t.Spec.SecretRef
		if ref.Key == "" {
			ref.Key = DefaultTokenSecretKey
		}
		return ref
	}
	return corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("%s-jwt-%s", t.Name, t.Spec.Username)},
		Key:                  DefaultTokenSecretKey,
	}
}
