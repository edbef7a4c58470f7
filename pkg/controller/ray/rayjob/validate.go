package rayjob

import (
	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

// validate checks metadata, spec and status, in KubeRay's order, with the
// rules the admission webhook applies (package validation).
func validate(job *rayv1.RayJob, cfg Config) *validation.RayJobValidationError {
	return validation.ValidateRayJob(job, cfg.Validation)
}
