package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "slinky.slurm.net", Version: "v1beta1"}

	// SchemeBuilder collects the kinds of this package; each types file
	// registers its own kinds from init.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme registers the kinds of this group-version on a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource qualifies a resource name with this package's group.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}
