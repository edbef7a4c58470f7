package webhook

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

// Two configurations call this one handler: creation fails closed, updates
// fail open (see "Ray updates fail open" in the package doc).
// +kubebuilder:webhook:path=/validate-ray-io-v1-raycluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayclusters,verbs=create,versions=v1,name=vraycluster.ray.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-ray-io-v1-raycluster,mutating=false,failurePolicy=ignore,sideEffects=None,groups=ray.io,resources=rayclusters,verbs=update,versions=v1,name=vraycluster-update.ray.io,admissionReviewVersions=v1

// RayClusterValidator admits RayClusters the RayCluster reconciler accepts:
// it runs the reconciler's metadata, spec and upgrade-option checks with the
// reconciler's options. Status is the reconciler's own and is not checked.
// KubeRay's webhook checks only the name and unique group names; these are
// a subset of the reconciler's rules, which KubeRay applies later, as events.
type RayClusterValidator struct {
	Options validation.SpecValidationOptions
	// MaxPodsPerCluster is --ray-max-pods-per-cluster; 0 means
	// validation.DefaultMaxPodsPerCluster.
	MaxPodsPerCluster int32
}

var _ admission.Validator[*rayv1.RayCluster] = (*RayClusterValidator)(nil)

func setupRayCluster(mgr ctrl.Manager, opts Options) error {
	limit := opts.RayMaxPodsPerCluster
	if limit <= 0 {
		limit = validation.DefaultMaxPodsPerCluster
	}
	return ctrl.NewWebhookManagedBy(mgr, &rayv1.RayCluster{}).
		WithValidator(&RayClusterValidator{
			Options:           validation.SpecValidationOptionsFromGates(opts.Features),
			MaxPodsPerCluster: limit,
		}).
		Complete()
}

// ValidateCreate implements admission.Validator.
func (v *RayClusterValidator) ValidateCreate(_ context.Context, obj *rayv1.RayCluster) (admission.Warnings, error) {
	return nil, v.validate(obj)
}

// ValidateUpdate implements admission.Validator.
func (v *RayClusterValidator) ValidateUpdate(_ context.Context, _, newObj *rayv1.RayCluster) (admission.Warnings, error) {
	if beingDeleted(newObj) {
		return nil, nil
	}
	return nil, v.validate(newObj)
}

// ValidateDelete implements admission.Validator.
func (v *RayClusterValidator) ValidateDelete(context.Context, *rayv1.RayCluster) (admission.Warnings, error) {
	return nil, nil
}

// validate reports the first failure of each layer; the reconciler stops at
// the first layer that fails, admission shows them all.
func (v *RayClusterValidator) validate(c *rayv1.RayCluster) error {
	var errs field.ErrorList
	if err := validation.ValidateRayClusterMetadata(c.ObjectMeta); err != nil {
		errs = append(errs, validation.AsFieldError(err, field.NewPath("metadata", "name")))
	}
	if err := validation.ValidateRayClusterSpec(&c.Spec, c.Annotations, v.Options); err != nil {
		errs = append(errs, validation.AsFieldError(err, field.NewPath("spec")))
	}
	if err := validation.ValidateRayClusterUpgradeOptions(c); err != nil {
		errs = append(errs, validation.AsFieldError(err, field.NewPath("spec", "upgradeStrategy")))
	}
	limit := v.MaxPodsPerCluster
	if limit == 0 {
		limit = validation.DefaultMaxPodsPerCluster
	}
	if err := validation.ValidatePodLimit(&c.Spec, limit); err != nil {
		errs = append(errs, validation.AsFieldError(err, field.NewPath("spec", "workerGroupSpecs")))
	}
	return invalid(rayv1.GroupVersion.WithKind("RayCluster").GroupKind(), c.Name, errs)
}
