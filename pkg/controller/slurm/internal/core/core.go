package core

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	k8sevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/apply"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// Reconciler is what every Slurm reconciler holds: embed it.
type Reconciler struct {
	// Client reads through the manager's cache and writes as
	// slinky.FieldOwner.
	Client client.Client
	// APIReader reads past the cache: Secrets (the manager caches only
	// their metadata), the ConfigMaps a spec references (cached without
	// their data) and objects the upstream operator made, which carry no
	// label the cache selects and are adopted through it.
	APIReader client.Reader
	// Refs reads the Secrets and ConfigMaps a spec references through
	// APIReader: the manager caches the first as metadata and the second
	// without their data, so that every Secret and ConfigMap of the
	// cluster (Helm releases, tokens, kube-root-ca.crt) is not held in
	// memory for the few reads. From a manager (FromManager), it keeps
	// what it read until the object changes (RefReader).
	Refs *refresolver.Resolver
	// Applier writes every object the kind owns (Ensure), taking over
	// in place what the upstream operator made, and moving what Gantry
	// once wrote by merge patch to server-side apply.
	Applier apply.Applier
	// Recorder records the kind's events.
	Recorder events.Recorder
	// Reported keeps a reconcile that read a stale status from recording a
	// transition's event twice.
	Reported status.Reported
	// Workers is the number of objects of the kind reconciled in parallel;
	// 0 means one.
	Workers int
}

// New returns a Reconciler writing through c, reading past the cache
// through apiReader and recording events with recorder (nil records none).
func New(c client.Client, apiReader client.Reader, recorder k8sevents.EventRecorder) Reconciler {
	return newReconciler(c, apiReader, recorder, 0)
}

func newReconciler(c client.Client, apiReader client.Reader, recorder k8sevents.EventRecorder, workers int) Reconciler {
	return newReconcilerReading(c, apiReader, refresolver.New(apiReader), recorder, workers)
}

// newReconcilerReading is newReconciler with refs reading the referenced
// objects.
func newReconcilerReading(c client.Client, apiReader client.Reader, refs *refresolver.Resolver, recorder k8sevents.EventRecorder, workers int) Reconciler {
	c = client.WithFieldOwner(c, slinky.FieldOwner)
	return Reconciler{
		Client:    c,
		APIReader: apiReader,
		Applier: apply.Applier{
			Client: c, FieldOwner: slinky.FieldOwner, Uncached: apiReader,
			// Gantry wrote these objects by merge patch, under the same
			// name, until it moved to server-side apply.
			UpgradeFrom: []string{slinky.FieldOwner},
		},
		Refs:     refs,
		Recorder: events.NewRecorder(recorder),
	}
}

// Sync converges the live object named by obj towards obj (Ensure),
// taking it over from the upstream operator, and notes its creation or
// change in log.
func (r *Reconciler) Sync(ctx context.Context, log *events.Log, obj client.Object) error {
	return r.sync(ctx, r.Applier, log, obj)
}

// SyncUncached is Sync for a kind the manager caches only as metadata
// (Secrets): the live object is read through APIReader.
func (r *Reconciler) SyncUncached(ctx context.Context, log *events.Log, obj client.Object) error {
	a := r.Applier
	a.Reader = r.APIReader
	return r.sync(ctx, a, log, obj)
}

func (r *Reconciler) sync(ctx context.Context, a apply.Applier, log *events.Log, obj client.Object) error {
	res, _, err := a.Ensure(ctx, obj)
	switch {
	case err != nil:
		return err
	case res == apply.Created:
		log.Created(obj)
	case res == apply.Updated:
		log.Updated(obj)
	}
	return nil
}

// Controller reads the Controller name in obj's namespace, which obj's
// controllerRef names.
func (r *Reconciler) Controller(ctx context.Context, obj client.Object, name string) (*slinkyv1beta1.Controller, error) {
	return refresolver.Get[*slinkyv1beta1.Controller](ctx, r.Client, refresolver.ObjectRef{Name: name}, obj.GetNamespace())
}

// Scope is the part of a reconcile's scope the skeleton uses. A kind's
// scope is a struct that embeds it, used by pointer; its steps read
// s.Object, s.Requeue and s.Events.
type Scope[T client.Object] struct {
	syncsteps.Base[T]
}

// scope is a kind's scope type: a pointer to a struct embedding Scope.
type scope[T client.Object, P any] interface {
	*P
	reconcile.Scope[T]
}

// Kind is what a Slurm kind supplies to the reconcile skeleton.
type Kind[T client.Object, S syncsteps.Scope] struct {
	// NewObject returns an empty object of the kind.
	NewObject func() T
	// Steps converge the kind's objects.
	Steps []syncsteps.Step[S]
	// StepWarnings records a Warning event for each failed step. Without
	// it a failure shows in the status only, and in the event of the
	// Ready transition it causes.
	StepWarnings bool
	// Status writes the status after the steps, from what they did and the
	// error they returned, and records the events of its transitions.
	Status func(ctx context.Context, s S, syncErr error) error
	// Forget, when set, drops what the process keeps about an object that
	// is gone (its metric series).
	Forget func(key types.NamespacedName)
	// UserError, when set, reports an error the user must fix. It is
	// reported by the status (and its event), not retried with back-off:
	// the watches bring the object back once the user acts.
	UserError func(error) bool
}

// Skeleton is the reconcile skeleton of the kind k describes: an object
// being deleted is left to the garbage collector, which takes what it
// owns, and a step's Conflict (a stale cache) is retried at once without
// a status write.
func Skeleton[T client.Object, P any, S scope[T, P]](r *Reconciler, k Kind[T, S]) reconcile.Skeleton[T, S] {
	return reconcile.New[T, S](r.Client, r.Recorder, &kind[T, P, S]{r: r, k: k},
		reconcile.Options{StepWarnings: k.StepWarnings, ConflictSkipsStatus: true})
}

// kind adapts a Kind to the skeleton's Workload.
type kind[T client.Object, P any, S scope[T, P]] struct {
	r *Reconciler
	k Kind[T, S]
}

func (a *kind[T, P, S]) NewObject() T { return a.k.NewObject() }

func (a *kind[T, P, S]) NewScope(obj T) S {
	s := S(new(P))
	s.Shared().Object = obj
	return s
}

func (a *kind[T, P, S]) Steps(S) []syncsteps.Step[S] { return a.k.Steps }

func (a *kind[T, P, S]) Status(ctx context.Context, s S, err error) error {
	return a.k.Status(ctx, s, err)
}

func (a *kind[T, P, S]) Forget(key types.NamespacedName) {
	if a.k.Forget != nil {
		a.k.Forget(key)
	}
}

// Skip leaves an object being deleted to the garbage collector.
func (a *kind[T, P, S]) Skip(_ context.Context, obj T) bool {
	if obj.GetDeletionTimestamp() == nil {
		return false
	}
	a.r.Reported.Forget(obj.GetUID())
	return true
}

func (a *kind[T, P, S]) UserError(err error) bool {
	return a.k.UserError != nil && a.k.UserError(err)
}
