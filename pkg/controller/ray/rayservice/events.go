package rayservice

import (
	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// eventActions is the action KubeRay v1.7.0's RayService controller
// records with each reason (rayservice_controller.go; utils.CreateAction
// and the others of utils/constant.go).
var eventActions = map[string]string{
	string(rayv1.InvalidRayServiceMetadata):          "Validate",
	string(rayv1.InvalidRayServiceSpec):              "Validate",
	string(rayv1.CreatedRayCluster):                  "Create",
	string(rayv1.FailedToCreateRayCluster):           "Create",
	string(rayv1.CreatedService):                     "Create",
	string(rayv1.FailedToCreateService):              "Create",
	string(rayv1.UpdatedRayCluster):                  "Update",
	string(rayv1.FailedToUpdateRayCluster):           "Update",
	string(rayv1.UpdatedService):                     "Update",
	string(rayv1.FailedToUpdateService):              "Update",
	string(rayv1.UpdatedServeApplications):           "Update",
	string(rayv1.FailedToUpdateServeApplications):    "Update",
	string(rayv1.UpdatedHeadPodServeLabel):           "Update",
	string(rayv1.FailedToUpdateHeadPodServeLabel):    "Update",
	string(rayv1.DeletedRayCluster):                  "Delete",
	string(rayv1.FailedToDeleteRayCluster):           "Delete",
	string(rayv1.DeletedService):                     "Delete",
	string(rayv1.FailedToDeleteService):              "Delete",
	string(rayv1.RayServiceInitializingTimeoutEvent): "Reconcile",
}
