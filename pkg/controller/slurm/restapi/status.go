package restapi

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
)

// ConditionReady is true when every slurmrestd replica of the current spec
// is available.
const ConditionReady = core.ConditionReady

// Reasons of the Ready condition.
const (
	ReasonDeploymentAvailable   = core.ReasonDeploymentAvailable
	ReasonDeploymentUnavailable = core.ReasonDeploymentUnavailable
	ReasonControllerNotFound    = core.ReasonControllerNotFound
	ReasonReferenceNotFound     = core.ReasonReferenceNotFound
	ReasonSyncFailed            = core.ReasonSyncFailed
)

// readyCondition derives Ready from the sync result and the live Deployment
// (nil when it does not exist yet).
func readyCondition(ra *slinkyv1beta1.RestApi, deploy *appsv1.Deployment, syncErr error) metav1.Condition {
	if syncErr != nil {
		return core.Failed(ra, syncErr)
	}
	return core.DeploymentAvailable(ra, "slurmrestd", deploy)
}
