package runtime

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// Conditions for failures that happen before a JobSet exists. Upstream only
// emits events for these; Gantry also writes them to the TrainJob so
// `kubectl get trainjob` shows why nothing runs. The JobSet-derived
// conditions are in Status (plugins/jobset/status.go).

// CreatedCondition maps the outcome of resolving, building and applying a
// TrainJob's objects (err from ResolveSpec, NewObjects or the apply) to its
// Created condition. LastTransitionTime is left zero for the status writer.
func CreatedCondition(err error) metav1.Condition {
	c := metav1.Condition{Type: trainer.TrainJobCreated, Status: metav1.ConditionFalse}
	switch {
	case err == nil:
		c.Status = metav1.ConditionTrue
		c.Reason, c.Message = trainer.TrainJobJobsCreationSucceededReason, trainer.TrainJobJobsCreationSucceededMessage
	case IsRuntimeNotFound(err):
		c.Reason, c.Message = trainer.TrainJobRuntimeNotFoundReason, err.Error()
	case IsBuildError(err) || isUnsupported(err):
		c.Reason = trainer.TrainJobJobsBuildFailedReason
		c.Message = fmt.Sprintf("%s: %v", trainer.TrainJobJobsBuildFailedMessage, err)
	default:
		c.Reason = trainer.TrainJobJobsCreationFailedReason
		c.Message = fmt.Sprintf("%s: %v", trainer.TrainJobJobsCreationFailedMessage, err)
	}
	return c
}

// FailedCondition returns the terminal Failed condition for errors no spec
// edit of the TrainJob can fix, because the runtime kind or one of its
// policies is not supported; ok is false for every other error.
func FailedCondition(err error) (c metav1.Condition, ok bool) {
	if !isUnsupported(err) {
		return metav1.Condition{}, false
	}
	return metav1.Condition{
		Type:    trainer.TrainJobFailed,
		Status:  metav1.ConditionTrue,
		Reason:  trainer.TrainJobRuntimeNotSupportedReason,
		Message: err.Error(),
	}, true
}

func isUnsupported(err error) bool {
	return errors.Is(err, ErrUnsupportedPolicy) || errors.Is(err, ErrUnsupportedRuntimeKind)
}
