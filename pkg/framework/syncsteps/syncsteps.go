// Package syncsteps runs the ordered, named steps of a reconcile.
//
// Contract: steps run in order. When a step fails, a Warning event with
// reason SyncStepFailed and note "step <name>: <error>" is recorded on the
// object, and the chain stops if the step is marked StopOnError, otherwise it
// continues with the next step. Run returns the errors of all failed steps,
// each wrapped as "step <name>: <error>" and joined with errors.Join, so
// errors.Is/As see every cause. Optimistic-concurrency conflicts are returned
// but not recorded as events: they are routine, retried at once, and every
// event is an API write.
//
// The recorder is the one controller-runtime's manager hands out from
// GetEventRecorder (k8s.io/client-go/tools/events); GetEventRecorderFor and
// its record.EventRecorder are deprecated in controller-runtime v0.24.
package syncsteps

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// ReasonStepFailed is the event reason for a failed step unless the step
	// names its own (upstream-compatible) reason.
	ReasonStepFailed = "SyncStepFailed"
	// ActionSync is the event action; the events API requires one.
	ActionSync = "Sync"
)

// Step is one named, idempotent part of a reconcile.
type Step[T client.Object] struct {
	// Name appears in events and errors.
	Name string
	// Sync does the work.
	Sync func(ctx context.Context, obj T) error
	// StopOnError skips the remaining steps when this one fails, for steps
	// whose successors depend on them (e.g. no worker pods without a head).
	StopOnError bool
	// FailureReason overrides ReasonStepFailed, so a workload can keep the
	// event reasons its upstream emits.
	FailureReason string
}

// Run executes steps in order against obj. A nil recorder records nothing.
// A cancelled context stops the chain before the next step.
func Run[T client.Object](ctx context.Context, recorder events.EventRecorder, obj T, steps []Step[T]) error {
	var errs []error
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		err := step.Sync(ctx, obj)
		if err == nil {
			continue
		}
		stepErr := fmt.Errorf("step %s: %w", step.Name, err)
		errs = append(errs, stepErr)
		if recorder != nil && !apierrors.IsConflict(err) {
			reason := step.FailureReason
			if reason == "" {
				reason = ReasonStepFailed
			}
			recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, ActionSync, "%s", stepErr.Error())
		}
		if step.StopOnError {
			break
		}
	}
	return errors.Join(errs...)
}
