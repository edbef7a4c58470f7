package raycluster

import rayv1 "github.com/gantry-dev/gantry/api/ray/v1"

// eventActions is the action KubeRay v1.7.0's RayCluster controller records
// with each reason (raycluster_controller.go; utils.CreateAction and the
// others of utils/constant.go). A reason of Gantry's own (AdoptedPods,
// PodLimitExceeded, the PodGroup's, ...) keeps the framework's action,
// Reconcile.
var eventActions = map[string]string{
	string(rayv1.InvalidRayClusterMetadata):         "Validate",
	string(rayv1.InvalidRayClusterSpec):             "Validate",
	string(rayv1.InvalidRayClusterStatus):           "Validate",
	ReasonAutoscalerServiceAccountNotFound:          "Validate",
	string(rayv1.CreatedHeadPod):                    "Create",
	string(rayv1.FailedToCreateHeadPod):             "Create",
	string(rayv1.CreatedWorkerPod):                  "Create",
	string(rayv1.FailedToCreateWorkerPod):           "Create",
	string(rayv1.CreatedService):                    "Create",
	string(rayv1.FailedToCreateService):             "Create",
	string(rayv1.CreatedIngress):                    "Create",
	string(rayv1.FailedToCreateIngress):             "Create",
	string(rayv1.CreatedRedisCleanupJob):            "Create",
	string(rayv1.FailedToCreateRedisCleanupJob):     "Create",
	"CreatedServiceAccount":                         "Create",
	"CreatedRole":                                   "Create",
	"CreatedRoleBinding":                            "Create",
	string(rayv1.DeletedHeadPod):                    "Delete",
	string(rayv1.FailedToDeleteHeadPod):             "Delete",
	string(rayv1.DeletedWorkerPod):                  "Delete",
	string(rayv1.FailedToDeleteWorkerPod):           "Delete",
	string(rayv1.DeletedPod):                        "Delete",
	string(rayv1.FailedToDeletePodCollection):       "Delete",
	string(rayv1.FailedToDeleteWorkerPodCollection): "Delete",
	ReasonForceDeletedStuckCluster:                  "Cleanup",
}
