package webhook

import (
	"context"
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// +kubebuilder:webhook:path=/validate-slinky-slurm-net-v1beta1-loginset,mutating=false,failurePolicy=fail,sideEffects=None,groups=slinky.slurm.net,resources=loginsets,verbs=create;update,versions=v1beta1,name=vloginset.slinky.slurm.net,admissionReviewVersions=v1

// LoginSet admission follows Slinky v1.2's LoginSet webhook (a Controller
// and an sssd.conf Secret must be named, controllerRef is fixed, external
// IPs on the Service draw a warning). Gantry acts on every LoginSet field,
// so none is refused as unsupported.

var loginSetGK = slinkyv1beta1.LoginSetGVK.GroupKind()

func setupLoginSet(mgr ctrl.Manager, _ Options) error {
	return ctrl.NewWebhookManagedBy(mgr, &slinkyv1beta1.LoginSet{}).
		WithValidator(&LoginSetValidator{}).
		Complete()
}

// LoginSetValidator validates LoginSets.
type LoginSetValidator struct{}

var _ admission.Validator[*slinkyv1beta1.LoginSet] = (*LoginSetValidator)(nil)

// ValidateCreate implements admission.Validator.
func (v *LoginSetValidator) ValidateCreate(_ context.Context, l *slinkyv1beta1.LoginSet) (admission.Warnings, error) {
	warnings, errs := validateLoginSet(l)
	return warnings, invalid(loginSetGK, l.Name, errs)
}

// ValidateUpdate implements admission.Validator. The login pods reach the
// slurmctld of the Controller they were made for, so controllerRef is
// fixed, as upstream has it.
func (v *LoginSetValidator) ValidateUpdate(_ context.Context, oldL, newL *slinkyv1beta1.LoginSet) (admission.Warnings, error) {
	if beingDeleted(newL) {
		return nil, nil
	}
	warnings, errs := validateLoginSet(newL)
	if newL.Spec.ControllerRef != oldL.Spec.ControllerRef {
		errs = append(errs, field.Invalid(slurmSpec.Child("controllerRef"), newL.Spec.ControllerRef,
			"cannot change controllerRef after deployment"))
	}
	return warnings, invalid(loginSetGK, newL.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (v *LoginSetValidator) ValidateDelete(context.Context, *slinkyv1beta1.LoginSet) (admission.Warnings, error) {
	return nil, nil
}

func validateLoginSet(l *slinkyv1beta1.LoginSet) (admission.Warnings, field.ErrorList) {
	var warnings admission.Warnings
	var errs field.ErrorList
	if l.Spec.ControllerRef.Name == "" {
		errs = append(errs, field.Required(slurmSpec.Child("controllerRef", "name"), "controllerRef.name must not be empty"))
	}
	if l.Spec.SssdConfRef.Name == "" {
		errs = append(errs, field.Required(slurmSpec.Child("sssdConfRef", "name"),
			"sssdConfRef.name must not be empty: the login pods' sssd needs an sssd.conf from a Secret"))
	}
	if l.Spec.SssdConfRef.Key == "" {
		errs = append(errs, field.Required(slurmSpec.Child("sssdConfRef", "key"), "sssdConfRef.key must name the sssd.conf key of the Secret"))
	}
	if n := ptr.Deref(l.Spec.Replicas, 0); n < 0 {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(n), slurmSpec.Child("replicas"))...)
	}
	for i, p := range l.Spec.Login.Ports {
		if p.Name == "login" && (p.ContainerPort < 1 || p.ContainerPort > 65535) {
			errs = append(errs, field.Invalid(slurmSpec.Child("login", "ports").Index(i).Child("containerPort"), p.ContainerPort,
				"the login port (sshd's) must be between 1 and 65535"))
		}
	}
	if len(l.Spec.Service.Spec.ExternalIPs) > 0 {
		warnings = append(warnings, fmt.Sprintf(externalIPsWarning, "loginset"))
	}
	return warnings, errs
}
