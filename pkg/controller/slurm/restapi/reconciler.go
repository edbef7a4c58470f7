// Package restapi reconciles Slinky RestApis: the slurmrestd Deployment and
// its Service, authenticating to the referenced Controller with JWTs.
package restapi

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/requeue"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/framework/syncobject"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-restapi"

// FieldOwner owns the fields Gantry writes on Slurm objects.
const FieldOwner = "gantry-slurm"

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
	client client.Client
	// apiReader reads past the cache (Secrets, and objects the upstream
	// operator made, which are adopted through it).
	apiReader client.Reader
	secrets   *refresolver.Resolver
	recorder  events.EventRecorder
	// Images fill in the slurmrestd image when the RestApi leaves it empty.
	Images common.Images
}

// NewReconciler returns a reconciler writing through c, reading Secrets
// through secretReader (the manager watches only their metadata) and
// recording events with recorder (nil records none).
func NewReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{
		client:    client.WithFieldOwner(c, FieldOwner),
		apiReader: apiReader,
		secrets:   refresolver.New(apiReader),
		recorder:  recorder,
		Images:    common.DefaultImages(),
	}
}

type syncRun struct {
	controller *slinkyv1beta1.Controller
	changes    common.ChangeLog
	requeue    requeue.Requeue
}

// Reconcile converges the objects of the RestApi named by req.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ra := &slinkyv1beta1.RestApi{}
	if err := r.client.Get(ctx, req.NamespacedName, ra); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ra.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}

	run := &syncRun{}
	syncErr := syncsteps.Run(ctx, r.recorder, ra, r.steps(run))
	run.changes.Record(r.recorder, ra)
	if apierrors.IsConflict(syncErr) {
		return ctrl.Result{}, syncErr
	}
	statusErr := r.updateStatus(ctx, ra, syncErr)
	if syncErr != nil && refresolver.IsNotFound(syncErr) {
		// Reported in the condition; the Controller and Secret watches bring
		// the RestApi back once the reference resolves.
		syncErr = nil
	}
	return run.requeue.Result(), errors.Join(syncErr, statusErr)
}

func (r *Reconciler) steps(run *syncRun) []syncsteps.Step[*slinkyv1beta1.RestApi] {
	return []syncsteps.Step[*slinkyv1beta1.RestApi]{
		{
			Name:        "Controller",
			StopOnError: true,
			Sync: func(ctx context.Context, ra *slinkyv1beta1.RestApi) error {
				c, err := refresolver.Get[*slinkyv1beta1.Controller](ctx, r.client,
					refresolver.ObjectRef{Name: ra.Spec.ControllerRef.Name}, ra.Namespace)
				run.controller = c
				return err
			},
		},
		{
			Name: "Service",
			Sync: func(ctx context.Context, ra *slinkyv1beta1.RestApi) error {
				return r.sync(ctx, BuildService(ra), &run.changes)
			},
		},
		{
			Name: "Deployment",
			Sync: func(ctx context.Context, ra *slinkyv1beta1.RestApi) error {
				var keyHash string
				if ref := run.controller.Spec.SlurmKeyRef; ref != nil {
					key, err := r.secrets.GetSecretKey(ctx, run.controller.Namespace, *ref)
					if err != nil {
						return err
					}
					keyHash = common.HashBytes(key)
				}
				return r.sync(ctx, BuildDeployment(ra, DeploymentInputs{
					Controller: run.controller, SlurmKeyHash: keyHash, Image: r.Images.Slurmrestd,
				}), &run.changes)
			},
		},
	}
}

func (r *Reconciler) sync(ctx context.Context, obj client.Object, changes *common.ChangeLog) error {
	res, err := syncobject.SyncObject(ctx, r.client, obj, syncobject.AdoptFrom(r.apiReader))
	if err != nil {
		return err
	}
	changes.Add(res, obj)
	return nil
}

func (r *Reconciler) updateStatus(ctx context.Context, ra *slinkyv1beta1.RestApi, syncErr error) error {
	var deploy *appsv1.Deployment
	live := &appsv1.Deployment{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: ra.Namespace, Name: common.RestApiName(ra.Name)}, live); {
	case err == nil:
		deploy = live
	case !apierrors.IsNotFound(err):
		return err
	}
	cond := readyCondition(ra, deploy, syncErr)
	_, err := status.Update(ctx, r.client, ra, func(obj *slinkyv1beta1.RestApi) error {
		meta.SetStatusCondition(&obj.Status.Conditions, cond)
		return nil
	})
	return err
}
