package webhook

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

// As for RayClusters and RayJobs ("Ray updates fail open" in the package
// doc), creation fails closed and updates fail open: a RayService created
// while the webhook is unreachable is refused rather than admitted to fail
// later as ValidationFailed; an update (Kueue's suspend, a new Serve
// config) never waits for Gantry.
// +kubebuilder:webhook:path=/validate-ray-io-v1-rayservice,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayservices,verbs=create,versions=v1,name=vrayservice.ray.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-ray-io-v1-rayservice,mutating=false,failurePolicy=ignore,sideEffects=None,groups=ray.io,resources=rayservices,verbs=update,versions=v1,name=vrayservice-update.ray.io,admissionReviewVersions=v1

// RayServiceValidator admits RayServices the RayService reconciler accepts:
// it runs the reconciler's metadata and spec checks (the embedded
// rayClusterConfig with the RayCluster rules) with the reconciler's
// options, and the CRD's spec.managedBy rule. Status is the reconciler's
// own and is not checked. KubeRay's webhook checks only the metadata and
// leaves the rest to its reconciler, which fails the RayService
// (ValidationFailed) after admission.
type RayServiceValidator struct {
	Options validation.RayServiceValidationOptions
}

var _ admission.Validator[*rayv1.RayService] = (*RayServiceValidator)(nil)

func setupRayService(mgr ctrl.Manager, opts Options) error {
	return ctrl.NewWebhookManagedBy(mgr, &rayv1.RayService{}).
		WithValidator(&RayServiceValidator{Options: validation.RayServiceValidationOptionsFromGates(opts.Features)}).
		Complete()
}

// ValidateCreate implements admission.Validator.
func (v *RayServiceValidator) ValidateCreate(_ context.Context, obj *rayv1.RayService) (admission.Warnings, error) {
	return nil, v.validate(nil, obj)
}

// ValidateUpdate implements admission.Validator. An update is held to the
// rules of a create, as in KubeRay, whose webhook refuses no spec change
// as such; spec.managedBy, once set, may not change to another manager.
func (v *RayServiceValidator) ValidateUpdate(_ context.Context, oldObj, newObj *rayv1.RayService) (admission.Warnings, error) {
	if beingDeleted(newObj) {
		return nil, nil
	}
	return nil, v.validate(oldObj, newObj)
}

// ValidateDelete implements admission.Validator.
func (v *RayServiceValidator) ValidateDelete(context.Context, *rayv1.RayService) (admission.Warnings, error) {
	return nil, nil
}

// validate reports the first failure of the metadata and of the spec, and
// the managedBy rule.
func (v *RayServiceValidator) validate(oldSvc, svc *rayv1.RayService) error {
	var errs field.ErrorList
	if err := validation.ValidateRayServiceMetadata(svc.ObjectMeta); err != nil {
		errs = append(errs, validation.FieldErrors(err, field.NewPath("metadata", "name"))...)
	}
	if err := validation.ValidateRayServiceManagedBy(oldSvc, svc); err != nil {
		errs = append(errs, validation.FieldErrors(err, field.NewPath("spec", "managedBy"))...)
	}
	if err := validation.ValidateRayServiceSpec(svc, v.Options); err != nil {
		errs = append(errs, validation.FieldErrors(err, field.NewPath("spec"))...)
	}
	return invalid(rayv1.RayServiceGroupVersionKind.GroupKind(), svc.Name, errs)
}
