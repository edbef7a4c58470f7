package rayjob

import (
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientevents "k8s.io/client-go/tools/events"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/events/eventscan"
)

// kubeRayActions is the action KubeRay v1.7.0's RayJob controller records
// with each reason, read in ray-operator/controllers/ray/rayjob_controller.go
// at tag v1.7.0 (the constants are utils.*Action of
// ray-operator/controllers/ray/utils/constant.go:559-565). Reasons Gantry
// has and KubeRay has not carry Gantry's action, "Reconcile".
var kubeRayActions = map[rayv1.EventReason]string{
	// :148, the reason validateRayJob returns (:470-472).
	rayv1.InvalidRayJobMetadata: "Validate",
	rayv1.InvalidRayJobSpec:     "Validate",
	rayv1.InvalidRayJobStatus:   "Validate",
	// :694, :697 (the head Service).
	rayv1.FailedToUpdateService: "Update",
	rayv1.UpdatedService:        "Update",
	// :706, :709.
	rayv1.FailedToCreateService: "Create",
	rayv1.CreatedService:        "Create",
	// :750, :754.
	rayv1.FailedToCreateRayJobSubmitter: "Create",
	rayv1.CreatedRayJobSubmitter:        "Create",
	// :785, :789.
	rayv1.FailedToDeleteRayJobSubmitter: "Delete",
	rayv1.DeletedRayJobSubmitter:        "Delete",
	// :824, :828.
	rayv1.FailedToDeleteRayCluster: "Delete",
	rayv1.DeletedRayCluster:        "Delete",
	// :850-851, :858 (the DeleteWorkers deletion rule).
	rayv1.FailedToUpdateRayCluster: "Update",
	rayv1.UpdatedRayCluster:        "Update",
	// :958.
	rayv1.RayClusterNotFound: "Validate",
	// :978, :981.
	rayv1.FailedToCreateRayCluster: "Create",
	rayv1.CreatedRayCluster:        "Create",
	// Gantry's own (KubeRay only logs it).
	ReasonJobStatusCheckFailed: events.Action,
}

// validationReasons are recorded through the validation error's
// EventReason, which the source scan below cannot follow.
var validationReasons = []rayv1.EventReason{rayv1.InvalidRayJobMetadata, rayv1.InvalidRayJobSpec, rayv1.InvalidRayJobStatus}

// Every event the RayJob controller records, Warning or Normal (a
// Log's), carries KubeRay's action for its reason.
func TestEventsCarryKubeRaysAction(t *testing.T) {
	eventscan.CheckActions(t, kubeRayActions, &rayv1.RayJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}}, func(rec clientevents.EventRecorder) events.Recorder {
		return newReconciler(nil, nil, rec, nil, nil, Config{}).recorder
	})
	t.Run("nil recorder", func(t *testing.T) {
		r := newReconciler(nil, nil, nil, nil, nil, Config{})
		r.recorder.Warning(&rayv1.RayJob{}, string(rayv1.CreatedRayCluster), "nothing recorded, no panic")
	})
}

// The table above covers every reason this package records: a new event
// needs its KubeRay action.
func TestEveryRecordedReasonHasAnAction(t *testing.T) {
	recorded := eventscan.Reasons(t, ".", filepath.Join("..", "..", "..", "..", "api", "ray", "v1"))
	for _, r := range validationReasons {
		recorded[string(r)] = "validation.RayJobValidationError.EventReason"
	}
	eventscan.CheckCovered(t, recorded, kubeRayActions)
}
