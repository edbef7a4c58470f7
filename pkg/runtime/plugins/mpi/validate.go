package mpi

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// reservedEnvNames are the OpenMPI variables EnforceMLPolicy writes on the
// launcher. Trainer v2.3 refuses a TrainJob whose spec.trainer.env sets any
// of them (its MPIReservedEnvNames); other OMPI_* variables (OMPI_MCA_btl,
// OMPI_ALLOW_RUN_AS_ROOT, ...) stay the user's to set.
var reservedEnvNames = sets.New(
	OpenMPIEnvHostFileLocation,
	OpenMPIEnvKeyRSHArgs,
	OpenMPIEnvKeepFQDNHostNames,
	OpenMPIEnvDefaultSlots,
)

// validateReservedEnv returns one Forbidden error per trainer env entry
// that names a reserved variable, so the user learns the value would not
// be used instead of having it replaced when the launcher is rendered.
func validateReservedEnv(job *trainer.TrainJob) field.ErrorList {
	return plugin.ReservedEnvErrors(job, reservedEnvNames, "MPI")
}
