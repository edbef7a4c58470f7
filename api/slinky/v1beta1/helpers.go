package v1beta1

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The helpers below resolve fields whose effective value is not simply the
// stored one. Objects built in Go (fake clients, unit tests) never pass
// through the API server's defaulting, so a nil there must mean the
// documented default.

// ClusterName is the Slurm ClusterName: spec.clusterName, else
// "<namespace>_<name>", which stays unique per cluster because a Kubernetes
// namespace cannot contain '_'.
func (c *Controller) ClusterName() string {
	if c.Spec.ClusterName != "" {
		return c.Spec.ClusterName
	}
	return fmt.Sprintf("%s_%s", c.Namespace, c.Name)
}

// EffectiveJwtKeyRef is the auth/jwt key: jwtKeyRef, else the deprecated
// jwtHs256KeyRef, else nil.
func (s *ControllerSpec) EffectiveJwtKeyRef() *corev1.SecretKeySelector {
	if s.JwtKeyRef != nil {
		return s.JwtKeyRef
	}
	return s.JwtHs256KeyRef
}

// IsEnabled reports whether slurmctld state is persisted; true unless
// explicitly disabled.
func (p *ControllerPersistence) IsEnabled() bool {
	return p.Enabled == nil || *p.Enabled
}

// ControllerKey locates the NodeSet's Controller; an empty namespace in the
// reference means the NodeSet's own namespace.
func (n *NodeSet) ControllerKey() types.NamespacedName {
	return n.Spec.ControllerRef.NamespacedName(n.Namespace)
}

// WorkloadDisruptionProtectionEnabled reports whether pods running jobs get a
// PodDisruptionBudget; true unless explicitly disabled.
func (s *NodeSetSpec) WorkloadDisruptionProtectionEnabled() bool {
	return s.WorkloadDisruptionProtection == nil || *s.WorkloadDisruptionProtection
}
