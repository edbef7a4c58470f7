// Package v1 holds the ray.io/v1 RayCluster API. It is wire-compatible with
// KubeRay's RayCluster (v1.6): same group, version, kind, JSON field names,
// defaults and enums, so manifests written for KubeRay apply unchanged. The
// exported Go names follow KubeRay's where users are likely to import them.
//
// +kubebuilder:object:generate=true
// +groupName=ray.io
package v1
