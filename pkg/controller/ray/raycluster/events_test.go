package raycluster

import (
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientevents "k8s.io/client-go/tools/events"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/events/eventscan"
)

// kubeRayActions is the action KubeRay v1.7.0's RayCluster controller
// records with each reason, read in
// ray-operator/controllers/ray/raycluster_controller.go at tag v1.7.0 (line
// numbers of its Eventf calls; the constants are utils.*Action of
// utils/constant.go:559-565). Reasons only Gantry records carry Gantry's
// action, "Reconcile".
var kubeRayActions = map[string]string{
	// :167, :174, :191, :200, :207, :214 (the reason of the validation error).
	string(rayv1.InvalidRayClusterMetadata): "Validate",
	string(rayv1.InvalidRayClusterSpec):     "Validate",
	string(rayv1.InvalidRayClusterStatus):   "Validate",
	// :2249.
	ReasonAutoscalerServiceAccountNotFound: "Validate",
	// :1659, :1664.
	string(rayv1.FailedToCreateHeadPod): "Create",
	string(rayv1.CreatedHeadPod):        "Create",
	// :1683, :1688, :1707, :1712.
	string(rayv1.FailedToCreateWorkerPod): "Create",
	string(rayv1.CreatedWorkerPod):        "Create",
	// :1628, :1632.
	string(rayv1.FailedToCreateService): "Create",
	string(rayv1.CreatedService):        "Create",
	// :562, :1593, :1597.
	string(rayv1.FailedToCreateIngress): "Create",
	string(rayv1.CreatedIngress):        "Create",
	// :343, :348.
	string(rayv1.FailedToCreateRedisCleanupJob): "Create",
	string(rayv1.CreatedRedisCleanupJob):        "Create",
	// :2276, :2318, :2360.
	"CreatedServiceAccount": "Create",
	"CreatedRole":           "Create",
	"CreatedRoleBinding":    "Create",
	// :1014, :1020.
	string(rayv1.FailedToDeleteHeadPod): "Delete",
	string(rayv1.DeletedHeadPod):        "Delete",
	// :1115, :1143, :1245, :1270; :1090, :1121, :1150, :1251, :1276.
	string(rayv1.FailedToDeleteWorkerPod): "Delete",
	string(rayv1.DeletedWorkerPod):        "Delete",
	// :946, :972; :952, :978.
	string(rayv1.FailedToDeletePodCollection): "Delete",
	string(rayv1.DeletedPod):                  "Delete",
	// :2471.
	ReasonForceDeletedStuckCluster: "Cleanup",
	// Gantry's own.
	ReasonAdoptedPods:      events.Action,
	ReasonPodLimitExceeded: events.Action,
	"RedisCleanupFailed":   events.Action,
	"RedisCleanupSkipped":  events.Action,
	"CreatedSecret":        events.Action,
	"CreatedPodGroup":      events.Action,
	"UpdatedPodGroup":      events.Action,
	"FailedToSyncPodGroup": events.Action,
}

// validationReasons are recorded through the validation error's
// EventReason, which the source scan cannot follow.
var validationReasons = []rayv1.EventReason{rayv1.InvalidRayClusterMetadata, rayv1.InvalidRayClusterSpec, rayv1.InvalidRayClusterStatus}

// Every event the RayCluster controller records, Warning or Normal (a
// Log's), carries KubeRay's action for its reason.
func TestEventsCarryKubeRaysAction(t *testing.T) {
	eventscan.CheckActions(t, kubeRayActions, &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}, func(rec clientevents.EventRecorder) events.Recorder {
		return newReconciler(nil, nil, rec, nil, Config{}).recorder
	})
}

// The table above covers every reason this package records: a new event
// needs its KubeRay action.
func TestEveryRecordedReasonHasAnAction(t *testing.T) {
	recorded := eventscan.ReasonsWith(t, ".", filepath.Join("..", "..", "..", "..", "api", "ray", "v1"), eventscan.Options{
		Calls:      map[string]int{"podEvents.add": 0, "r.warnNotOwned": 1, "r.deleteAllPods": 3},
		Forwarders: []string{"warnNotOwned", "deleteAllPods"},
	})
	for _, r := range validationReasons {
		recorded[string(r)] = "validation.RayClusterValidationError.EventReason"
	}
	eventscan.CheckCovered(t, recorded, kubeRayActions)
}
