package reconcile

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// Scope is what one reconcile knows: a workload's struct that embeds
// syncsteps.Base, used by pointer.
type Scope[T client.Object] interface {
	syncsteps.Scope
	Shared() *syncsteps.Base[T]
}

// Workload is what every workload supplies for one kind.
type Workload[T client.Object, S Scope[T]] interface {
	// NewObject returns an empty object of the kind, to read into.
	NewObject() T
	// NewScope starts one reconcile of obj, as read.
	NewScope(obj T) S
	// Steps are this reconcile's steps: they may depend on what Load read
	// (a finished job's steps are not a running one's).
	Steps(s S) []syncsteps.Step[S]
	// Status writes the status once, from what the phases did and the
	// error of Validate or the steps, and notes the events of its
	// transitions.
	Status(ctx context.Context, s S, err error) error
}

// Forgetter drops what the process keeps about an object that is gone
// (metric series, expectations, caches).
type Forgetter interface {
	Forget(key types.NamespacedName)
}

// Skipper leaves an object alone: another manager's, or one that must not
// be touched now. Nothing is written, not even the status.
type Skipper[T client.Object] interface {
	Skip(ctx context.Context, obj T) bool
}

// Loader reads what the steps and the status share into the scope, once
// per reconcile. An error ends the reconcile, to be retried.
type Loader[S any] interface {
	Load(ctx context.Context, s S) error
}

// Validator checks the object before anything is written for it.
type Validator[S any] interface {
	Validate(ctx context.Context, s S) error
}

// Finalizer adds the workload's finalizers to a live object and runs them
// for one being deleted. stop ends the reconcile of a live object after
// it (its error, if any, is returned).
type Finalizer[S any] interface {
	Finalize(ctx context.Context, s S) (stop bool, err error)
}

// UserErrors tells the errors the user must fix from those worth a retry.
type UserErrors interface {
	UserError(err error) bool
}

// Options tune the skeleton for one kind.
type Options struct {
	// StepWarnings records a Warning event for each failed step (package
	// syncsteps). Without it a failure shows in the status only, and in
	// the event of the transition it causes.
	StepWarnings bool
	// ConflictSkipsStatus returns a step's Conflict at once, without the
	// status write: the cache was stale, and a status computed from it
	// would be too.
	ConflictSkipsStatus bool
}

// Skeleton reconciles one kind through its Workload. Embed it: it is the
// kind's reconcile.Reconciler.
type Skeleton[T client.Object, S Scope[T]] struct {
	reader   client.Reader
	recorder events.Recorder
	workload Workload[T, S]
	opts     Options
}

// New returns the skeleton of w, reading the object through reader and
// recording events with recorder.
func New[T client.Object, S Scope[T]](reader client.Reader, recorder events.Recorder, w Workload[T, S], opts Options) Skeleton[T, S] {
	return Skeleton[T, S]{reader: reader, recorder: recorder, workload: w, opts: opts}
}

// Reconcile runs the phases for the object req names.
func (k *Skeleton[T, S]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := k.workload
	obj := w.NewObject()
	if err := k.reader.Get(ctx, req.NamespacedName, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		if f, ok := w.(Forgetter); ok {
			f.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, nil
	}
	if sk, ok := w.(Skipper[T]); ok && sk.Skip(ctx, obj) {
		return ctrl.Result{}, nil
	}
	fin, finalizes := w.(Finalizer[S])
	deleting := obj.GetDeletionTimestamp() != nil
	if deleting && !finalizes {
		return ctrl.Result{}, nil
	}
	s := w.NewScope(obj)
	base := s.Shared()
	flush := func() { base.Events.Flush(k.recorder, base.Object) }
	var err error
	if v, ok := w.(Validator[S]); ok {
		err = v.Validate(ctx, s)
	}
	if err == nil && finalizes {
		stop, ferr := fin.Finalize(ctx, s)
		if ferr != nil || stop || deleting {
			flush()
			return base.Result(), ferr
		}
	}
	if l, ok := w.(Loader[S]); ok && err == nil {
		if lerr := l.Load(ctx, s); lerr != nil {
			flush()
			return ctrl.Result{}, lerr
		}
	}
	if err == nil {
		var stepEvents events.Recorder
		if k.opts.StepWarnings {
			stepEvents = k.recorder
		}
		err = syncsteps.Run(ctx, stepEvents, s, w.Steps(s))
		if k.opts.ConflictSkipsStatus && apierrors.IsConflict(err) {
			flush()
			return ctrl.Result{}, err
		}
	}
	statusErr := w.Status(ctx, s, err)
	flush()
	if u, ok := w.(UserErrors); ok && err != nil && u.UserError(err) {
		log.FromContext(ctx).V(1).Info("waiting for the user", "reason", err.Error())
		err = nil
	}
	return base.Result(), errors.Join(err, statusErr)
}
