package raycluster

import (
	"fmt"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

// ReasonPodLimitExceeded is the ReplicaFailure condition's reason, and the
// Warning event's, when worker Pod creation stopped at the pod limit.
const ReasonPodLimitExceeded = "PodLimitExceeded"

// podLimitError is the ReplicaFailure the reconciler reports while the spec
// is over the limit: the head is kept, no worker Pod is created.
func podLimitError(spec *rayv1.RayClusterSpec, limit int32) error {
	err := validation.ValidatePodLimit(spec, limit)
	if err == nil {
		return nil
	}
	return NewReplicaFailureError(ReasonPodLimitExceeded, fmt.Errorf("worker Pod creation stopped: %w", err))
}
