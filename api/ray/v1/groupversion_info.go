package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "ray.io", Version: "v1"}

	// SchemeBuilder registers this package's kinds on a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kind names, for owner references and GVK lookups without reflection.
const (
	RayClusterKind     = "RayCluster"
	RayClusterListKind = "RayClusterList"
	RayJobKind         = "RayJob"
	RayServiceKind     = "RayService"
)

// RayClusterGroupVersionKind identifies the RayCluster kind.
var RayClusterGroupVersionKind = GroupVersion.WithKind(RayClusterKind)

// RayJobGroupVersionKind identifies the RayJob kind.
var RayJobGroupVersionKind = GroupVersion.WithKind(RayJobKind)

// RayServiceGroupVersionKind identifies the RayService kind.
var RayServiceGroupVersionKind = GroupVersion.WithKind(RayServiceKind)
