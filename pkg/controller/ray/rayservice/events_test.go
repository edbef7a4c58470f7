package rayservice

import (
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientevents "k8s.io/client-go/tools/events"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/events/eventscan"
)

// kubeRayActions is the action KubeRay v1.7.0's RayService controller
// records with each reason, read in
// ray-operator/controllers/ray/rayservice_controller.go at tag v1.7.0 (the
// constants are utils.*Action of
// ray-operator/controllers/ray/utils/constant.go:559-565).
var kubeRayActions = map[rayv1.EventReason]string{
	// :160, the reason validateRayService returns (:339-340).
	rayv1.InvalidRayServiceMetadata: "Validate",
	rayv1.InvalidRayServiceSpec:     "Validate",
	// :489, :493 (suspend), :1293, :1296 (replaced clusters, deletion).
	rayv1.FailedToDeleteRayCluster: "Delete",
	rayv1.DeletedRayCluster:        "Delete",
	// :510, :514 (suspend).
	rayv1.FailedToDeleteService: "Delete",
	rayv1.DeletedService:        "Delete",
	// :1230, :1233, :1245, :1248.
	rayv1.FailedToUpdateRayCluster: "Update",
	rayv1.UpdatedRayCluster:        "Update",
	// :1482, :1486.
	rayv1.FailedToCreateRayCluster: "Create",
	rayv1.CreatedRayCluster:        "Create",
	// :1964, :1967.
	rayv1.FailedToUpdateService: "Update",
	rayv1.UpdatedService:        "Update",
	// :1976, :1979.
	rayv1.FailedToCreateService: "Create",
	rayv1.CreatedService:        "Create",
	// :2053, :2056.
	rayv1.FailedToUpdateServeApplications: "Update",
	rayv1.UpdatedServeApplications:        "Update",
	// :2112, :2115.
	rayv1.FailedToUpdateHeadPodServeLabel: "Update",
	rayv1.UpdatedHeadPodServeLabel:        "Update",
	// :2272.
	rayv1.RayServiceInitializingTimeoutEvent: "Reconcile",
}

// validationReasons are recorded through the validation error's
// EventReason, which the source scan below cannot follow.
var validationReasons = []rayv1.EventReason{rayv1.InvalidRayServiceMetadata, rayv1.InvalidRayServiceSpec}

// Every event the RayService controller records, Warning or Normal (a
// Log's), carries KubeRay's action for its reason.
func TestEventsCarryKubeRaysAction(t *testing.T) {
	eventscan.CheckActions(t, kubeRayActions, &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}, func(rec clientevents.EventRecorder) events.Recorder {
		return newReconciler(nil, nil, rec, nil, nil, Config{}).recorder
	})
	t.Run("nil recorder", func(t *testing.T) {
		r := newReconciler(nil, nil, nil, nil, nil, Config{})
		r.recorder.Warning(&rayv1.RayService{}, string(rayv1.CreatedRayCluster), "nothing recorded, no panic")
	})
}

// The table above covers every reason this package records: a new event
// needs its KubeRay action.
func TestEveryRecordedReasonHasAnAction(t *testing.T) {
	recorded := eventscan.Reasons(t, ".", filepath.Join("..", "..", "..", "..", "api", "ray", "v1"))
	for _, r := range validationReasons {
		recorded[string(r)] = "validation.RayServiceValidationError.EventReason"
	}
	eventscan.CheckCovered(t, recorded, kubeRayActions)
}
