package accounting

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

var specPath = field.NewPath("spec")

// ValidateSpec returns what keeps slurmdbd from being built or started:
// without a database host and password, or without the keys it shares
// with slurmctld, there is nothing it could run with. The admission webhook
// refuses these; the reconciler reports them for clusters without it. The
// schema cannot require them, since Slinky's does not (storageConfig is
// optional there, and an external Accounting needs none of them).
func ValidateSpec(a *slinkyv1beta1.Accounting) field.ErrorList {
	var errs field.ErrorList
	if a.Spec.External {
		ext := a.Spec.ExternalConfig
		p := specPath.Child("externalConfig")
		switch {
		case ext == nil:
			errs = append(errs, field.Required(p, "must be set when external is true"))
		case ext.Host == "":
			errs = append(errs, field.Required(p.Child("host"), "the external slurmdbd's host name or address"))
		case ext.Port <= 0 || ext.Port > 65535:
			errs = append(errs, field.Invalid(p.Child("port"), ext.Port, "must be a port number (slurmdbd's is 6819)"))
		}
		return errs
	}
	storage := specPath.Child("storageConfig")
	if a.Spec.StorageConfig.Host == "" {
		errs = append(errs, field.Required(storage.Child("host"), "the database server slurmdbd writes to (StorageHost)"))
	}
	if p := a.Spec.StorageConfig.PasswordKeyRef; p.Name == "" || p.Key == "" {
		errs = append(errs, field.Required(storage.Child("passwordKeyRef"), "the Secret name and key of the database password (StoragePass)"))
	}
	if port := a.Spec.StorageConfig.Port; port < 0 || port > 65535 {
		errs = append(errs, field.Invalid(storage.Child("port"), port, "must be a port number (MariaDB's is 3306)"))
	}
	if a.Spec.Template.Spec.HostNetwork {
		errs = append(errs, field.Invalid(specPath.Child("template", "spec", "hostNetwork"), true,
			"not supported: on the host's network the pod's host name is the node's, and slurmdbd refuses to start "+
				"unless its host name is slurmdbd.conf's DbdHost (<name>-accounting-0)"))
	}
	if ref := a.Spec.SlurmKeyRef; ref == nil || ref.Name == "" || ref.Key == "" {
		errs = append(errs, field.Required(specPath.Child("slurmKeyRef"), "the auth/slurm key slurmdbd shares with slurmctld"))
	}
	if ref := a.Spec.EffectiveJwtKeyRef(); ref == nil || ref.Name == "" || ref.Key == "" {
		errs = append(errs, field.Required(specPath.Child("jwtKeyRef"), "the auth/jwt key slurmdbd shares with slurmctld"))
	}
	return errs
}

// operatorOwnedParameters are the slurmdbd.conf parameters the Service,
// the probe and the pod are built around: set differently in extraConf,
// slurmdbd would listen where nothing reaches it, or refuse to start.
var operatorOwnedParameters = map[string]string{
	"dbdhost":     "it must be the pod's host name, <name>-accounting-0, which slurmdbd checks",
	"dbdport":     "the Service, the container port and the readiness probe use 6819; set spec.service.port to expose another",
	"storagetype": "slurmdbd has only accounting_storage/mysql, which Gantry sets",
}

// ExtraConfOverrides lists the operator-owned parameters extraConf sets,
// spelled as the user spelled them, each with why Gantry cannot honour it.
func ExtraConfOverrides(extraConf string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(extraConf, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		for _, item := range strings.Fields(line) {
			key, _, ok := strings.Cut(item, "=")
			if why, owned := operatorOwnedParameters[strings.ToLower(key)]; ok && owned {
				out[key] = why
			}
		}
	}
	return out
}
