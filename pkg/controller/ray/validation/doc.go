// Package validation holds the RayCluster checks KubeRay's controller and
// webhook make (metadata, spec, status, upgrade options, the Pod limit),
// shared by Gantry's RayCluster reconciler and its admission webhook so that
// a cluster admitted is one the controller accepts. A refusal is a
// ValidationError naming the layer and the field; AsFieldError turns it into
// a field.Error for admission.
package validation
