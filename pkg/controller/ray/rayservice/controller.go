package rayservice

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/dashboards"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/finalizers"
	skeleton "github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

const (
	// Name is the controller's name in logs and metrics; it runs with the
	// Ray family (--controllers=raycluster).
	Name = "rayservice"
	// ControllerName names the controller in events.
	ControllerName = "rayservice-controller"
	// DefaultRequeue is how often a RayService is looked at again
	// (KubeRay's ServiceDefaultRequeueDuration): Serve's state is polled
	// from the dashboard.
	DefaultRequeue = 2 * time.Second
	// DefaultClusterDeletionDelay is how long a replaced RayCluster is kept
	// (KubeRay's RayClusterDeletionDelayDuration).
	DefaultClusterDeletionDelay = 60 * time.Second
)

// +kubebuilder:rbac:groups=ray.io,resources=rayservices,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayservices/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayservices/finalizers,verbs=update
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// With --use-kubernetes-proxy the dashboard and the Serve proxy are reached
// through services/proxy and pods/proxy.
// (A Serve config is PUT: update.)
// +kubebuilder:rbac:groups="",resources=services/proxy,verbs=get;create;update
// +kubebuilder:rbac:groups="",resources=pods/proxy,verbs=get

// Reconciler reconciles RayServices.
type Reconciler struct {
	skeleton.Skeleton[*rayv1.RayService, *scope]
	client     client.Client
	apiReader  client.Reader
	recorder   events.Recorder
	dashboards *dashboards.Clients
	metrics    *ServiceMetrics
	cfg        Config
	clock      clock.PassiveClock
	workers    int
	// serveConfigs remembers the Serve config last applied to each
	// cluster: the dashboard does not say which config it runs.
	serveConfigs *serveConfigCache
	// deletions holds when each replaced cluster is to be deleted.
	deletions *deletionSchedule
}

// Options configure a RayService Reconciler.
type Options struct {
	workload.Options
	Config     Config
	Dashboards *dashboards.Clients
}

// New builds the RayService reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	metrics, err := NewServiceMetrics(o.RegistererOrDefault())
	if err != nil {
		return nil, err
	}
	r := newReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(ControllerName), o.Dashboards, metrics, o.Config)
	r.clock = o.ClockOrReal()
	r.workers = o.Workers()
	return r, nil
}

// newReconciler builds a reconciler from its parts, for New and for unit
// tests without a manager; metrics may be nil.
func newReconciler(c client.Client, apiReader client.Reader, recorder clientevents.EventRecorder, d *dashboards.Clients, metrics *ServiceMetrics, cfg Config) *Reconciler {
	if d == nil {
		d = &dashboards.Clients{Secrets: apiReader}
	}
	r := &Reconciler{
		client:       c,
		apiReader:    apiReader,
		recorder:     events.NewRecorderWithActions(recorder, eventActions),
		dashboards:   d,
		metrics:      metrics,
		cfg:          cfg.withDefaults(),
		clock:        clock.RealClock{},
		workers:      1,
		serveConfigs: newServeConfigCache(),
		deletions:    newDeletionSchedule(),
	}
	r.Skeleton = skeleton.New(c, r.recorder, skeleton.Workload[*rayv1.RayService, *scope](r), skeleton.Options{})
	return r
}

// SetupWithManager registers the controller and its watches: the
// RayService (its spec, labels and annotations, as KubeRay: its own status
// writes wake nothing), and the RayClusters and Services it owns.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	changed := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	return workload.NewController(mgr, Name, &rayv1.RayService{}, r.workers, changed).
		Owns(&rayv1.RayCluster{}).
		Owns(&corev1.Service{}).
		Complete(r)
}

// A RayService's reconcile runs on the framework's skeleton: Skip
// (another manager's) → Finalize (its clusters go before it does; the
// finalizer is added) → Load (its clusters) → one step (sync.go), which
// cleans up replaced clusters before it validates the RayService → Status,
// the one status write → the soonest requeue. There is no Validate phase:
// KubeRay v1.7.0 validates a RayService only after the cleanup, the
// deletion and the finalizer, so an invalid spec holds none of them up.

// NewObject is an empty RayService.
func (r *Reconciler) NewObject() *rayv1.RayService { return &rayv1.RayService{} }

// NewScope starts one reconcile of svc.
func (r *Reconciler) NewScope(svc *rayv1.RayService) *scope {
	return &scope{Base: syncsteps.Base[*rayv1.RayService]{Object: svc}, observed: *svc.Status.DeepCopy(), now: r.clock.Now()}
}

// Forget drops what is kept in memory for a RayService that is gone.
func (r *Reconciler) Forget(key types.NamespacedName) {
	if r.metrics != nil {
		r.metrics.Forget(key.Namespace, key.Name)
	}
	r.serveConfigs.forget(key)
	r.deletions.forget(key)
}

// Skip leaves a RayService that MultiKueue manages alone.
func (r *Reconciler) Skip(ctx context.Context, svc *rayv1.RayService) bool {
	if r.metrics != nil {
		r.metrics.Set(svc)
	}
	if m := svc.Spec.ManagedBy; m != nil && *m != rayv1.KubeRayController {
		ctrl.LoggerFrom(ctx).V(1).Info("skipping a RayService managed by another controller", "managedBy", *m)
		return true
	}
	return false
}

// validate checks the RayService's metadata and spec, as the sync step's
// first check after the cleanup of replaced clusters; a failure is
// KubeRay's Warning, and the status says Ready=False (ValidationFailed).
func (r *Reconciler) validate(s *scope) error {
	svc := s.Object
	verr := validation.ValidateRayService(svc, r.cfg.Validation)
	if verr == nil {
		return nil
	}
	r.recorder.Warning(svc, string(verr.EventReason()), "%s/%s: %v", svc.Namespace, svc.Name, verr.Err)
	return verr
}

// UserError: an invalid RayService waits for the user's edit.
func (r *Reconciler) UserError(err error) bool {
	var verr *validation.RayServiceValidationError
	return errors.As(err, &verr)
}

// Finalize adds the finalizer to a new RayService; a RayService being
// deleted deletes its clusters at once (no delay) and lets go once they
// are gone, as KubeRay does.
func (r *Reconciler) Finalize(ctx context.Context, s *scope) (bool, error) {
	svc := s.Object
	if svc.DeletionTimestamp == nil {
		_, err := finalizers.Add(ctx, r.client, svc, rayv1.RayServiceFinalizer)
		return err != nil, err
	}
	clusters, err := r.listClusters(ctx, svc)
	if err != nil {
		return true, err
	}
	for i := range clusters {
		r.deleteCluster(ctx, s, &clusters[i], "RayService is being deleted")
	}
	if len(clusters) > 0 {
		s.Requeue.After(DefaultRequeue)
		return true, nil
	}
	_, err = finalizers.Remove(ctx, r.client, svc, rayv1.RayServiceFinalizer)
	return true, err
}

// Load reads the RayService's clusters.
func (r *Reconciler) Load(ctx context.Context, s *scope) error {
	clusters, err := r.listClusters(ctx, s.Object)
	if err != nil {
		return err
	}
	s.clusters = clusters
	st := &s.Object.Status
	for i := range clusters {
		c := &clusters[i]
		switch c.Name {
		case st.ActiveServiceStatus.RayClusterName:
			s.active = c
		case st.PendingServiceStatus.RayClusterName:
			s.pending = c
		}
	}
	return nil
}

// Steps is the one step: the RayService's flow (sync.go).
func (r *Reconciler) Steps(*scope) []syncsteps.Step[*scope] {
	return []syncsteps.Step[*scope]{{Name: "sync", Sync: r.sync}}
}

// scope is what one reconcile of a RayService knows.
type scope struct {
	syncsteps.Base[*rayv1.RayService]
	// observed is the status as read; the step changes Object's.
	observed rayv1.RayServiceStatuses
	now      time.Time
	// clusters are the RayService's clusters; active and pending those of
	// them its status names (nil when there are none).
	clusters        []rayv1.RayCluster
	active, pending *rayv1.RayCluster
	// hold: the status is not to be written this time.
	hold bool
}

func headServiceName(svc *rayv1.RayService) string { return svc.Name + "-head-svc" }

// serveServiceName is the Serve Service's name: spec.serveService's when
// it names one (its namespace is never used: the Service is always in the
// RayService's, as KubeRay's), else "<rayservice>-serve-svc".
func serveServiceName(svc *rayv1.RayService) string {
	if user := svc.Spec.ServeService; user != nil && user.Name != "" {
		return user.Name
	}
	return svc.Name + "-serve-svc"
}
