package syncsteps

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/requeue"
)

// ReasonStepFailed is the event reason for a failed step unless the step
// names its own (upstream-compatible) reason.
const ReasonStepFailed = "SyncStepFailed"

// Scope is what Run needs of a reconcile's scope: the object its events are
// about.
type Scope interface {
	Regarding() client.Object
}

// Base is the part of a scope every reconcile has. Embed it (as a value) in
// a family's scope struct and use the scope by pointer.
type Base[T client.Object] struct {
	// Object is the object being reconciled, as read at the start.
	Object T
	// Requeue collects the steps' requests to be reconciled again.
	Requeue requeue.Requeue
	// Events collects what the steps changed, flushed after the status write.
	Events events.Log
}

// Regarding is the object the reconcile's events are recorded on.
func (b *Base[T]) Regarding() client.Object { return b.Object }

// Shared returns the base itself, so that a scope embedding it satisfies
// the reconcile skeleton's Scope.
func (b *Base[T]) Shared() *Base[T] { return b }

// Result is the soonest requeue the steps asked for.
func (b *Base[T]) Result() ctrl.Result { return b.Requeue.Result() }

// Step is one named, idempotent part of a reconcile over scope S.
type Step[S Scope] struct {
	// Name appears in events and errors.
	Name string
	// Sync does the work.
	Sync func(ctx context.Context, s S) error
	// Skip, when set and true, leaves the step out of this reconcile (e.g.
	// a step that does not apply to an externally run daemon).
	Skip func(s S) bool
	// StopOnError skips the remaining steps when this one fails, for steps
	// whose successors depend on them (e.g. no worker pods without a head).
	StopOnError bool
	// FailureReason overrides ReasonStepFailed, so a workload can keep the
	// event reasons its upstream emits.
	FailureReason string
	// ReportsOwnFailure marks a step whose failure the reconciler reports
	// itself, in a condition and its event (e.g. a job whose runtime
	// is missing): Run records no event for it and returns its error as
	// is, so the condition carries the cause's own message.
	ReportsOwnFailure bool
}

// Run executes steps in order over s. A cancelled context stops the chain
// before the next step.
func Run[S Scope](ctx context.Context, recorder events.Recorder, s S, steps []Step[S]) error {
	var errs []error
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if step.Skip != nil && step.Skip(s) {
			continue
		}
		err := step.Sync(ctx, s)
		if err == nil {
			continue
		}
		if step.ReportsOwnFailure {
			errs = append(errs, err)
			if step.StopOnError {
				break
			}
			continue
		}
		stepErr := fmt.Errorf("step %s: %w", step.Name, err)
		errs = append(errs, stepErr)
		if !apierrors.IsConflict(err) {
			reason := step.FailureReason
			if reason == "" {
				reason = ReasonStepFailed
			}
			recorder.Warning(s.Regarding(), reason, "%s", stepErr.Error())
		}
		if step.StopOnError {
			break
		}
	}
	return errors.Join(errs...)
}
