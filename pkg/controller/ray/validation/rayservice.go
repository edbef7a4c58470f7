package validation

import (
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// The RayService checks KubeRay v1.7.0 makes (utils.ValidateRayServiceMetadata
// and ValidateRayServiceSpec), shared by the RayService reconciler and the
// RayService admission webhook. As for RayJob, the rules and their order are
// KubeRay's, the messages Gantry's: each names the field it is about, and
// the field.Error it carries points at it.
//
// One deliberate difference: Gantry does not implement incremental upgrades
// (KubeRay's RayServiceIncrementalUpgrade feature gate, beta and on by
// default in v1.7.0, alpha and off in v1.6), so upgradeStrategy.type
// NewClusterWithIncrementalUpgrade and upgradeStrategy.clusterUpgradeOptions
// are refused, as if the gate were off and the API's rule ("the
// RayServiceIncrementalUpgrade feature gate must be enabled to set
// ClusterUpgradeOptions") were enforced. KubeRay with the gate off admits
// the type and then never replaces the cluster; refusing it tells the user
// at once.

// RayServiceValidationOptions carries the operator settings some RayService
// rules depend on.
type RayServiceValidationOptions struct {
	// Cluster are the options of the embedded rayClusterConfig's rules, the
	// RayCluster ones.
	Cluster SpecValidationOptions
}

// RayServiceValidationOptionsFromGates derives the options from the
// process's feature gates, as SpecValidationOptionsFromGates does for a
// RayCluster; the RayService reconciler and webhook both use it.
func RayServiceValidationOptionsFromGates(gates featuregate.FeatureGate) RayServiceValidationOptions {
	return RayServiceValidationOptions{Cluster: SpecValidationOptionsFromGates(gates)}
}

// RayServiceValidationError is what ValidateRayService returns: the layer
// that failed (Metadata or Spec) and why.
type RayServiceValidationError struct {
	Layer ValidationLayer
	Err   error
}

func (e *RayServiceValidationError) Error() string { return e.Err.Error() }
func (e *RayServiceValidationError) Unwrap() error { return e.Err }

// EventReason is the reason of the Warning event the reconciler emits,
// KubeRay's.
func (e *RayServiceValidationError) EventReason() rayv1.EventReason {
	if e.Layer == ValidationLayerMetadata {
		return rayv1.InvalidRayServiceMetadata
	}
	return rayv1.InvalidRayServiceSpec
}

// ValidateRayService runs the metadata and the spec checks in KubeRay's
// order and returns the first failure, or nil.
func ValidateRayService(svc *rayv1.RayService, opts RayServiceValidationOptions) *RayServiceValidationError {
	if err := ValidateRayServiceMetadata(svc.ObjectMeta); err != nil {
		return &RayServiceValidationError{Layer: ValidationLayerMetadata, Err: err}
	}
	if err := ValidateRayServiceSpec(svc, opts); err != nil {
		return &RayServiceValidationError{Layer: ValidationLayerSpec, Err: err}
	}
	return nil
}

var (
	rayServiceClusterPath   = specPath.Child("rayClusterConfig")
	rayServiceUpgradePath   = specPath.Child("upgradeStrategy")
	initializingTimeoutPath = annotationsPath.Key(rayv1.RayServiceInitializingTimeoutAnnotation)
)

// ValidateRayServiceMetadata checks the RayService's name, which its
// RayClusters' names (and so their Pods' and Services') are made of, and
// its ray.io/initializing-timeout annotation.
func ValidateRayServiceMetadata(objectMeta metav1.ObjectMeta) error {
	namePath := field.NewPath("metadata", "name")
	if len(objectMeta.Name) > rayv1.MaxRayServiceNameLength {
		return invalidf(namePath, objectMeta.Name, "metadata.name must be no more than %d characters (it has %d): "+
			"the RayClusters the RayService creates are named after it with a 6-character suffix", rayv1.MaxRayServiceNameLength, len(objectMeta.Name))
	}
	if errs := validation.IsDNS1035Label(objectMeta.Name); len(errs) > 0 {
		return invalidf(namePath, objectMeta.Name, "metadata.name must be a valid DNS-1035 label: %s", strings.Join(errs, "; "))
	}
	return validateInitializingTimeout(objectMeta.Annotations)
}

// validateInitializingTimeout checks the ray.io/initializing-timeout
// annotation, when set and not empty: a positive Go duration ("30m"), or
// else a positive whole number of seconds. The duration is tried first, so
// "0" is a zero duration, not zero seconds (the message says so, as
// KubeRay's does).
func validateInitializingTimeout(annotations map[string]string) error {
	value := annotations[rayv1.RayServiceInitializingTimeoutAnnotation]
	if value == "" {
		return nil
	}
	key := rayv1.RayServiceInitializingTimeoutAnnotation
	if d, err := time.ParseDuration(value); err == nil {
		if d <= 0 {
			return invalidf(initializingTimeoutPath, value, "annotation %s must be a positive duration, got %q", key, value)
		}
		return nil
	}
	if seconds, err := strconv.Atoi(value); err == nil {
		if seconds <= 0 {
			return invalidf(initializingTimeoutPath, value, "annotation %s must be a positive number of seconds, got %q", key, value)
		}
		return nil
	}
	return invalidf(initializingTimeoutPath, value, "annotation %s must be a Go duration such as \"5m\" or \"1h\", "+
		"or a positive whole number of seconds, got %q", key, value)
}

// ValidateRayServiceSpec checks the rules the API server cannot express in
// the CRD schema, in KubeRay's order (which decides the message a spec with
// several problems gets), the embedded rayClusterConfig with the RayCluster
// rules.
func ValidateRayServiceSpec(svc *rayv1.RayService, opts RayServiceValidationOptions) error {
	spec := &svc.Spec
	cluster := &spec.RayClusterSpec
	if a := cluster.AuthOptions; a != nil && a.EnableK8sTokenAuth != nil && *a.EnableK8sTokenAuth {
		return forbiddenf(rayServiceClusterPath.Child("authOptions", "enableK8sTokenAuth"),
			"spec.rayClusterConfig.authOptions.enableK8sTokenAuth is not supported for a RayService")
	}
	if err := ValidateRayClusterSpec(cluster, svc.Annotations, opts.Cluster); err != nil {
		return underRayService(err)
	}
	// The RayService names its clusters' head Services itself: one name for
	// two clusters during an upgrade would clash.
	if headSvc := cluster.HeadGroupSpec.HeadService; headSvc != nil && headSvc.Name != "" {
		return forbiddenf(rayServiceClusterPath.Child("headGroupSpec", "headService", "metadata", "name"),
			"spec.rayClusterConfig.headGroupSpec.headService.metadata.name must not be set: "+
				"the RayService names the head Service of each of its RayClusters")
	}
	if err := validateRayServiceUpgradeType(spec.UpgradeStrategy); err != nil {
		return err
	}
	if d := spec.RayClusterDeletionDelaySeconds; d != nil && *d < 0 {
		return invalidf(specPath.Child("rayClusterDeletionDelaySeconds"), *d,
			"spec.rayClusterDeletionDelaySeconds must not be negative")
	}
	// Where KubeRay checks the options of an incremental upgrade.
	if s := spec.UpgradeStrategy; s != nil && s.ClusterUpgradeOptions != nil {
		return forbiddenf(rayServiceUpgradePath.Child("clusterUpgradeOptions"),
			"spec.upgradeStrategy.clusterUpgradeOptions configure NewClusterWithIncrementalUpgrade, which Gantry does not implement yet "+
				"(KubeRay v1.7.0 runs it behind its RayServiceIncrementalUpgrade gate); remove spec.upgradeStrategy.clusterUpgradeOptions")
	}
	return nil
}

// validateRayServiceUpgradeType admits NewCluster and None (and no type):
// KubeRay's third, NewClusterWithIncrementalUpgrade, is refused (see the
// top of this file).
func validateRayServiceUpgradeType(strategy *rayv1.RayServiceUpgradeStrategy) error {
	if strategy == nil || strategy.Type == nil {
		return nil
	}
	path := rayServiceUpgradePath.Child("type")
	switch t := *strategy.Type; t {
	case rayv1.RayServiceNewCluster, rayv1.RayServiceUpgradeNone:
		return nil
	case rayv1.RayServiceNewClusterWithIncrementalUpgrade:
		return forbiddenf(path, "spec.upgradeStrategy.type %s is not implemented by Gantry yet "+
			"(KubeRay v1.7.0 runs it behind its RayServiceIncrementalUpgrade gate); use %s", t, rayv1.RayServiceNewCluster)
	default:
		return invalidf(path, string(t), "spec.upgradeStrategy.type %q is not supported: valid types are %s and %s",
			t, rayv1.RayServiceNewCluster, rayv1.RayServiceUpgradeNone)
	}
}

// ValidateRayServiceManagedBy is the CRD's rule for spec.managedBy, in Go
// for the webhook, as ValidateRayJobManagedBy is for a RayJob: one of the
// two known managers and, once set, never changed to another (oldSvc is nil
// on create); the field may be added or removed. The reconciler does not
// call it: it skips a RayService another manager owns before validating.
func ValidateRayServiceManagedBy(oldSvc, svc *rayv1.RayService) error {
	managedBy := svc.Spec.ManagedBy
	if managedBy == nil {
		return nil
	}
	path := specPath.Child("managedBy")
	if m := *managedBy; m != rayv1.KubeRayController && m != rayv1.MultiKueueController {
		return &FieldError{Field: field.NotSupported(path, m, []string{rayv1.KubeRayController, rayv1.MultiKueueController})}
	}
	if oldSvc != nil && oldSvc.Spec.ManagedBy != nil && *oldSvc.Spec.ManagedBy != *managedBy {
		return invalidf(path, *managedBy, "spec.managedBy is immutable: it was %q", *oldSvc.Spec.ManagedBy)
	}
	return nil
}

// underRayService moves a RayCluster spec error under
// spec.rayClusterConfig, in its path and its message. Annotation paths
// stay: they are the RayService's, which its clusters inherit.
func underRayService(err error) error {
	fe := AsFieldError(err, rayServiceClusterPath)
	moved := *fe
	if rest, ok := strings.CutPrefix(fe.Field, specPath.String()+"."); ok {
		moved.Field = rayServiceClusterPath.String() + "." + rest
	}
	moved.Detail = "spec.rayClusterConfig: " + fe.Detail
	return &FieldError{Field: &moved}
}
