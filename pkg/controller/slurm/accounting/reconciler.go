package accounting

import (
	"context"
	"fmt"

	k8sevents "k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-accounting"

// +kubebuilder:rbac:groups=slinky.slurm.net,resources=accountings,verbs=get;list;watch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=accountings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=accountings/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles one Accounting per call.
type Reconciler struct {
	core.Reconciler
	reconcile.Skeleton[*slinkyv1beta1.Accounting, *scope]
	// Images fill in the slurmdbd image when the Accounting leaves it empty.
	Images slinky.Images
}

// Options configure the Accounting reconciler.
type Options = core.Options

// New builds the Accounting reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	return (&Reconciler{Reconciler: core.FromManager(mgr, Name, o.Options), Images: o.Images.Or(slinky.DefaultImages())}).withSkeleton(), nil
}

// newReconciler returns a reconciler writing through c, reading Secrets
// through apiReader and recording events with recorder (nil records none),
// for New and for tests without a manager.
func newReconciler(c client.Client, apiReader client.Reader, recorder k8sevents.EventRecorder) *Reconciler {
	return (&Reconciler{Reconciler: core.New(c, apiReader, recorder), Images: slinky.DefaultImages()}).withSkeleton()
}

// scope is what one reconcile knows: the Accounting, and what the pod
// depends on as the steps learn it.
type scope struct {
	core.Scope[*slinkyv1beta1.Accounting]
	pod PodInputs
}

// external reports an Accounting whose slurmdbd runs outside Kubernetes:
// nothing is made for it.
func external(s *scope) bool { return s.Object.Spec.External }

// withSkeleton sets the reconcile skeleton, whose Reconcile converges the objects of the Accounting named by req. A failed
// step is reported by the Ready condition, and by one event when the
// condition turns to it, not by one event per retry.
func (r *Reconciler) withSkeleton() *Reconciler {
	r.Skeleton = core.Skeleton(&r.Reconciler, core.Kind[*slinkyv1beta1.Accounting, *scope]{
		NewObject: func() *slinkyv1beta1.Accounting { return &slinkyv1beta1.Accounting{} },
		Steps:     r.steps(), Status: r.updateStatus, UserError: isUserError,
	})
	return r
}

func (r *Reconciler) steps() []syncsteps.Step[*scope] {
	return []syncsteps.Step[*scope]{
		// An external slurmdbd's host and port are checked too: they go
		// into the Controller's slurm.conf.
		{Name: "Spec", StopOnError: true, Sync: validateForSync},
		{Name: "Service", Skip: external, Sync: r.syncService},
		// The pod cannot start without them; its hashes roll it when one
		// changes, since slurmdbd reads keys only at start.
		{Name: "Keys", Skip: external, StopOnError: true, Sync: r.readKeys},
		{Name: "Config", Skip: external, StopOnError: true, Sync: r.syncConfig},
		{Name: "StatefulSet", Skip: external, Sync: r.syncStatefulSet},
	}
}

func (r *Reconciler) syncService(ctx context.Context, s *scope) error {
	return r.Sync(ctx, &s.Events, BuildService(s.Object))
}

// syncConfig renders slurmdbd.conf with the database password into its
// Secret and notes its hash for the pod.
func (r *Reconciler) syncConfig(ctx context.Context, s *scope) error {
	a := s.Object
	password, err := r.Refs.GetSecretKey(ctx, a.Namespace, a.Spec.StorageConfig.PasswordKeyRef)
	if err != nil {
		return err
	}
	conf, err := RenderSlurmdbdConf(a, string(password))
	if err != nil {
		return fmt.Errorf("storageConfig.passwordKeyRef (Secret %s, key %s): %w",
			a.Spec.StorageConfig.PasswordKeyRef.Name, a.Spec.StorageConfig.PasswordKeyRef.Key, err)
	}
	s.pod.ConfHash = slinky.HashStrings(map[string]string{SlurmdbdConfFile: conf})
	// Read through the API server: the cache holds no Secret data.
	return r.SyncUncached(ctx, &s.Events, BuildConfigSecret(a, conf))
}

func (r *Reconciler) syncStatefulSet(ctx context.Context, s *scope) error {
	in := s.pod
	in.Image = r.Images.Slurmdbd
	return r.Sync(ctx, &s.Events, BuildStatefulSet(s.Object, in))
}

// validateForSync refuses what the admission webhook refuses, for clusters
// that run without it: a slurmdbd without a database or keys cannot start.
func validateForSync(_ context.Context, s *scope) error {
	if errs := ValidateSpec(s.Object); len(errs) > 0 {
		return fmt.Errorf("%w: %s", errInvalidSpec, errs.ToAggregate().Error())
	}
	return nil
}

// readKeys hashes the selected key of each referenced Secret (not the whole
// Secret, so unrelated keys in a shared Secret do not roll slurmdbd) and
// checks that the JWKS ConfigMap key exists.
func (r *Reconciler) readKeys(ctx context.Context, s *scope) error {
	a, in := s.Object, &s.pod
	if ref := a.Spec.SlurmKeyRef; ref != nil {
		v, err := r.Refs.GetSecretKey(ctx, a.Namespace, *ref)
		if err != nil {
			return err
		}
		in.SlurmKeyHash = slinky.HashBytes(v)
	}
	if ref := a.Spec.EffectiveJwtKeyRef(); ref != nil {
		v, err := r.Refs.GetSecretKey(ctx, a.Namespace, *ref)
		if err != nil {
			return err
		}
		in.JwtKeyHash = slinky.HashBytes(v)
	}
	if ref := a.Spec.JwksKeyRef; ref != nil {
		if _, err := r.Refs.GetConfigMapKey(ctx, a.Namespace, *ref); err != nil {
			return err
		}
	}
	return nil
}
