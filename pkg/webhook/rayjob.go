package webhook

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

// As for RayClusters ("Ray updates fail open" in the package doc), creation
// fails closed and updates fail open: a RayJob created while the webhook is
// unreachable is refused rather than admitted to fail later as
// ValidationFailed, where the user no longer looks; Kueue's suspend toggles
// on an admitted RayJob never wait for Gantry.
// +kubebuilder:webhook:path=/validate-ray-io-v1-rayjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayjobs,verbs=create,versions=v1,name=vrayjob.ray.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-ray-io-v1-rayjob,mutating=false,failurePolicy=ignore,sideEffects=None,groups=ray.io,resources=rayjobs,verbs=update,versions=v1,name=vrayjob-update.ray.io,admissionReviewVersions=v1

// RayJobValidator admits RayJobs the RayJob reconciler accepts: it runs the
// reconciler's metadata and spec checks (the embedded rayClusterSpec with
// the RayCluster rules) with the reconciler's options, and the CRD's
// spec.managedBy rule. Status is the reconciler's own and is not checked.
// KubeRay's webhook checks only the name and leaves the rest to its
// reconciler, which fails the RayJob (ValidationFailed) after admission.
type RayJobValidator struct {
	Options validation.RayJobValidationOptions
}

var _ admission.Validator[*rayv1.RayJob] = (*RayJobValidator)(nil)

func setupRayJob(mgr ctrl.Manager, opts Options) error {
	return ctrl.NewWebhookManagedBy(mgr, &rayv1.RayJob{}).
		WithValidator(&RayJobValidator{Options: validation.RayJobValidationOptionsFromGates(opts.Features)}).
		Complete()
}

// ValidateCreate implements admission.Validator.
func (v *RayJobValidator) ValidateCreate(_ context.Context, obj *rayv1.RayJob) (admission.Warnings, error) {
	return nil, v.validate(nil, obj)
}

// ValidateUpdate implements admission.Validator. An update is held to the
// rules of a create, as in KubeRay, whose webhook refuses no spec change
// as such; spec.managedBy, once set, may not change to another manager.
func (v *RayJobValidator) ValidateUpdate(_ context.Context, oldObj, newObj *rayv1.RayJob) (admission.Warnings, error) {
	if beingDeleted(newObj) {
		return nil, nil
	}
	return nil, v.validate(oldObj, newObj)
}

// ValidateDelete implements admission.Validator.
func (v *RayJobValidator) ValidateDelete(context.Context, *rayv1.RayJob) (admission.Warnings, error) {
	return nil, nil
}

// validate reports the first failure of the metadata and the spec (every
// problem of the deletion rules), and the managedBy rule.
func (v *RayJobValidator) validate(oldJob, job *rayv1.RayJob) error {
	var errs field.ErrorList
	if err := validation.ValidateRayJobMetadata(job.ObjectMeta); err != nil {
		errs = append(errs, validation.FieldErrors(err, field.NewPath("metadata", "name"))...)
	}
	if err := validation.ValidateRayJobManagedBy(oldJob, job); err != nil {
		errs = append(errs, validation.FieldErrors(err, field.NewPath("spec", "managedBy"))...)
	}
	if err := validation.ValidateRayJobSpec(job, v.Options); err != nil {
		errs = append(errs, validation.FieldErrors(err, field.NewPath("spec"))...)
	}
	return invalid(rayv1.GroupVersion.WithKind(rayv1.RayJobKind).GroupKind(), job.Name, errs)
}
