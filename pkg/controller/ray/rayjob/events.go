package rayjob

import (
	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// eventActions is the action KubeRay v1.7.0's RayJob controller records
// with each reason (rayjob_controller.go; utils.CreateAction and the
// others of utils/constant.go). A reason of Gantry's own keeps the
// framework's action, Reconcile.
var eventActions = map[string]string{
	string(rayv1.InvalidRayJobMetadata):         "Validate",
	string(rayv1.InvalidRayJobSpec):             "Validate",
	string(rayv1.InvalidRayJobStatus):           "Validate",
	string(rayv1.RayClusterNotFound):            "Validate",
	string(rayv1.CreatedRayCluster):             "Create",
	string(rayv1.FailedToCreateRayCluster):      "Create",
	string(rayv1.CreatedRayJobSubmitter):        "Create",
	string(rayv1.FailedToCreateRayJobSubmitter): "Create",
	string(rayv1.CreatedService):                "Create",
	string(rayv1.FailedToCreateService):         "Create",
	string(rayv1.UpdatedService):                "Update",
	string(rayv1.FailedToUpdateService):         "Update",
	string(rayv1.UpdatedRayCluster):             "Update",
	string(rayv1.FailedToUpdateRayCluster):      "Update",
	string(rayv1.DeletedRayCluster):             "Delete",
	string(rayv1.FailedToDeleteRayCluster):      "Delete",
	string(rayv1.DeletedRayJobSubmitter):        "Delete",
	string(rayv1.FailedToDeleteRayJobSubmitter): "Delete",
}
