package restapi

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sevents "k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-restapi"

// +kubebuilder:rbac:groups=slinky.slurm.net,resources=restapis,verbs=get;list;watch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=restapis/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=restapis/finalizers,verbs=update
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=controllers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles one RestApi per call.
type Reconciler struct {
	core.Reconciler
	reconcile.Skeleton[*slinkyv1beta1.RestApi, *scope]
	// Images fill in the slurmrestd image when the RestApi leaves it empty.
	Images slinky.Images
}

// Options configure the RestApi reconciler.
type Options = core.Options

// New builds the RestApi reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	return (&Reconciler{Reconciler: core.FromManager(mgr, Name, o.Options), Images: o.Images.Or(slinky.DefaultImages())}).withSkeleton(), nil
}

// newReconciler returns a reconciler writing through c, reading Secrets
// through apiReader (the manager watches only their metadata) and
// recording events with recorder (nil records none), for New and for
// tests without a manager.
func newReconciler(c client.Client, apiReader client.Reader, recorder k8sevents.EventRecorder) *Reconciler {
	return (&Reconciler{Reconciler: core.New(c, apiReader, recorder), Images: slinky.DefaultImages()}).withSkeleton()
}

// scope is what one reconcile knows.
type scope struct {
	core.Scope[*slinkyv1beta1.RestApi]
	controller *slinkyv1beta1.Controller
}

// withSkeleton sets the reconcile skeleton, whose Reconcile converges the objects of the RestApi named by req. A missing
// reference is reported in the condition; the Controller and Secret watches
// bring the RestApi back once it resolves.
func (r *Reconciler) withSkeleton() *Reconciler {
	r.Skeleton = core.Skeleton(&r.Reconciler, core.Kind[*slinkyv1beta1.RestApi, *scope]{
		NewObject: func() *slinkyv1beta1.RestApi { return &slinkyv1beta1.RestApi{} },
		Steps:     r.steps(), StepWarnings: true, Status: r.updateStatus, UserError: refresolver.IsNotFound,
	})
	return r
}

func (r *Reconciler) steps() []syncsteps.Step[*scope] {
	return []syncsteps.Step[*scope]{
		{Name: "Controller", StopOnError: true, Sync: r.getController},
		{Name: "Service", Sync: r.syncService},
		{Name: "Deployment", Sync: r.syncDeployment},
	}
}

func (r *Reconciler) getController(ctx context.Context, s *scope) (err error) {
	s.controller, err = r.Controller(ctx, s.Object, s.Object.Spec.ControllerRef.Name)
	return err
}

func (r *Reconciler) syncService(ctx context.Context, s *scope) error {
	return r.Sync(ctx, &s.Events, BuildService(s.Object))
}

func (r *Reconciler) syncDeployment(ctx context.Context, s *scope) error {
	var keyHash string
	if ref := s.controller.Spec.SlurmKeyRef; ref != nil {
		key, err := r.Refs.GetSecretKey(ctx, s.controller.Namespace, *ref)
		if err != nil {
			return err
		}
		keyHash = slinky.HashBytes(key)
	}
	return r.Sync(ctx, &s.Events, BuildDeployment(s.Object, DeploymentInputs{
		Controller: s.controller, SlurmKeyHash: keyHash, Image: r.Images.Slurmrestd,
	}))
}

func (r *Reconciler) updateStatus(ctx context.Context, s *scope, syncErr error) error {
	ra := s.Object
	deploy, err := core.Live(ctx, r.Client, client.ObjectKey{Namespace: ra.Namespace, Name: slinky.RestApiName(ra.Name)}, &appsv1.Deployment{})
	if err != nil {
		return err
	}
	return core.UpdateStatus(ctx, &r.Reconciler, ra, conditions, readyCondition(ra, deploy, syncErr), nil, nil)
}

func conditions(ra *slinkyv1beta1.RestApi) *[]metav1.Condition { return &ra.Status.Conditions }
