package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/accounting"
)

// +kubebuilder:webhook:path=/validate-slinky-slurm-net-v1beta1-accounting,mutating=false,failurePolicy=fail,sideEffects=None,groups=slinky.slurm.net,resources=accountings,verbs=create;update,versions=v1beta1,name=vaccounting.slinky.slurm.net,admissionReviewVersions=v1

// Accounting admission follows Slinky v1.2's Accounting webhook (the JWT
// key cannot change after deployment; external IPs on the Service draw a
// warning) and adds what the reconciler needs to run slurmdbd at all
// (accounting.ValidateSpec: a database host and password, the keys), so a
// manifest that could never start is refused at apply time rather than
// reported later. Gantry builds everything else Slinky builds; what it
// refuses as unsupported are the slurmdbd.conf parameters in extraConf
// that the Service, probe and pod are built around.

var accountingGK = slinkyv1beta1.AccountingGVK.GroupKind()

func setupAccounting(mgr ctrl.Manager, _ Options) error {
	return ctrl.NewWebhookManagedBy(mgr, &slinkyv1beta1.Accounting{}).
		WithValidator(&AccountingValidator{}).
		Complete()
}

// AccountingValidator validates Accountings.
type AccountingValidator struct{}

var _ admission.Validator[*slinkyv1beta1.Accounting] = (*AccountingValidator)(nil)

// ValidateCreate implements admission.Validator.
func (v *AccountingValidator) ValidateCreate(_ context.Context, a *slinkyv1beta1.Accounting) (admission.Warnings, error) {
	errs := append(accounting.ValidateSpec(a), unsupportedAccountingFields(a)...)
	return accountingWarnings(a), invalid(accountingGK, a.Name, errs)
}

// ValidateUpdate implements admission.Validator.
func (v *AccountingValidator) ValidateUpdate(_ context.Context, oldA, newA *slinkyv1beta1.Accounting) (admission.Warnings, error) {
	if beingDeleted(newA) {
		return nil, nil
	}
	errs := accounting.ValidateSpec(newA)
	if specChanged(oldA.Spec, newA.Spec) {
		errs = append(errs, unsupportedAccountingFields(newA)...)
	}
	if !equality.Semantic.DeepEqual(newA.Spec.EffectiveJwtKeyRef(), oldA.Spec.EffectiveJwtKeyRef()) {
		errs = append(errs, field.Forbidden(slurmSpec.Child("jwtKeyRef"),
			"the value of JwtKeyRef or JwtHs256KeyRef cannot be modified after deployment"))
	}
	return accountingWarnings(newA), invalid(accountingGK, newA.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (v *AccountingValidator) ValidateDelete(context.Context, *slinkyv1beta1.Accounting) (admission.Warnings, error) {
	return nil, nil
}

// unsupportedAccountingFields refuses extraConf lines Gantry cannot
// honour: slurmdbd would listen on a port nothing reaches, or refuse to
// start under a host name that is not its own.
func unsupportedAccountingFields(a *slinkyv1beta1.Accounting) field.ErrorList {
	if a.Spec.External {
		return nil
	}
	overrides := accounting.ExtraConfOverrides(a.Spec.ExtraConf)
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs field.ErrorList
	for _, k := range keys {
		errs = append(errs, field.Invalid(slurmSpec.Child("extraConf"), k+"=…",
			fmt.Sprintf("not supported by Gantry: %s is set by the operator (%s); remove it from extraConf", k, overrides[k])))
	}
	return errs
}

func accountingWarnings(a *slinkyv1beta1.Accounting) admission.Warnings {
	var warnings admission.Warnings
	if len(a.Spec.Service.Spec.ExternalIPs) > 0 {
		warnings = append(warnings, fmt.Sprintf(externalIPsWarning, "accounting"))
	}
	if a.Spec.External && strings.TrimSpace(a.Spec.ExtraConf) != "" {
		warnings = append(warnings, "spec.extraConf is not used when external is true: the external slurmdbd has its own slurmdbd.conf")
	}
	return warnings
}
