package rayjob

import (
	"fmt"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// invalidError is a RayJob the user must fix; reason is its event's.
type invalidError struct {
	reason rayv1.EventReason
	err    error
}

func (e *invalidError) Error() string { return e.err.Error() }
func (e *invalidError) Unwrap() error { return e.err }

// validate checks metadata, spec and status, in KubeRay's order.
func validate(job *rayv1.RayJob, cfg Config) *invalidError {
	_ = cfg
	if len(job.Name) > 47 {
		return &invalidError{reason: rayv1.InvalidRayJobMetadata, err: fmt.Errorf("RayJob name should be no more than 47 characters")}
	}
	return nil
}
