package raycluster

import (
	"context"
	"errors"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	"github.com/gantry-dev/gantry/pkg/framework/apply"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/expectations"
	skeleton "github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

const (
	// Name is the controller's name in --controllers.
	Name = "raycluster"
	// ControllerName names the controller in logs, metrics and events.
	ControllerName = "raycluster-controller"
)

// InvalidStatusRequeueDelay is how soon a cluster whose status failed
// validation is retried. Unlike the other layers, a bad status is usually a
// half-applied update of our own that the next reconcile repairs.
const InvalidStatusRequeueDelay = 2 * time.Second

// FieldOwner is the field manager of every object the RayCluster
// controller applies.
const FieldOwner = "gantry-raycluster"

// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete;deletecollection
// The autoscaler Role grants pods/resize (in-place resize); RBAC lets the
// manager grant only what it holds itself.
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;create;update
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;create
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete

// Reconciler reconciles RayClusters.
type Reconciler struct {
	// Skeleton runs the reconcile (Reconcile) through this Reconciler's
	// phases.
	skeleton.Skeleton[*rayv1.RayCluster, *scope]
	client       client.Client
	apiReader    client.Reader
	recorder     events.Recorder
	expectations *expectations.Expectations
	adoptions    adoptionScans
	applier      apply.Applier
	metrics      *ClusterMetrics
	cfg          Config
	clock        clock.PassiveClock
	// workers is the number of RayClusters reconciled in parallel.
	workers int
}

// Options configure a RayCluster Reconciler.
type Options struct {
	workload.Options
	// Config is KubeRay's operator configuration (its environment
	// variables and gates), read once at start-up.
	Config Config
}

// New builds the RayCluster reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	metrics, err := NewClusterMetrics(o.RegistererOrDefault())
	if err != nil {
		return nil, err
	}
	r := newReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(ControllerName), metrics, o.Config)
	r.clock = o.ClockOrReal()
	r.workers = o.Workers()
	return r, nil
}

// newReconciler builds a reconciler from its parts, for New and for unit
// tests without a manager. apiReader reads uncached objects (Secrets);
// metrics may be nil.
func newReconciler(c client.Client, apiReader client.Reader, recorder clientevents.EventRecorder, metrics *ClusterMetrics, cfg Config) *Reconciler {
	r := &Reconciler{
		client:       c,
		apiReader:    apiReader,
		recorder:     events.NewRecorderWithActions(recorder, eventActions),
		expectations: expectations.New(),
		applier:      apply.Applier{Client: c, FieldOwner: FieldOwner},
		metrics:      metrics,
		cfg:          cfg,
		clock:        clock.RealClock{},
		workers:      1,
	}
	r.Skeleton = skeleton.New(c, r.recorder, skeleton.Workload[*rayv1.RayCluster, *scope](r), skeleton.Options{StepWarnings: true})
	return r
}

// podUpdateDelay is how long a Pod's update waits before it reconciles
// its cluster, so that a cluster's Pods scheduled and becoming Ready one
// after another are seen in one reconcile and one status write, not one
// each (workload.CoalesceUpdates). A Pod created or deleted reconciles at
// once.
const podUpdateDelay = time.Second

// SetupWithManager registers the controller and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	podOwner := expectations.LabelOwner(rayv1.RayClusterLabelKey, rayv1.RayNodeGroupLabelKey)
	enqueueOwner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &rayv1.RayCluster{}, handler.OnlyControllerOwner())
	return workload.NewController(mgr, Name, &rayv1.RayCluster{}, r.workers, workload.SpecChanged).
		Watches(&corev1.Pod{}, r.expectations.Handler(podOwner, workload.CoalesceUpdates(enqueueOwner, podUpdateDelay))).
		Owns(&corev1.Service{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&batchv1.Job{}).
		Owns(&networkingv1.Ingress{}).
		Complete(r)
}

// A RayCluster's reconcile runs on the framework's skeleton: Skip
// (another manager's cluster) → Validate → Finalize (the GCS fault
// tolerance finalizer) → Load (the cluster's Pods, listed once) → Steps
// (RBAC and the auth Secret, then Services and Pods) → Status, the one
// status write → the soonest requeue.

// NewObject is an empty RayCluster.
func (r *Reconciler) NewObject() *rayv1.RayCluster { return &rayv1.RayCluster{} }

// Forget drops what the process keeps about a RayCluster that is gone.
func (r *Reconciler) Forget(key types.NamespacedName) {
	r.expectations.Delete(key.String())
	r.adoptions.forget(key)
	if r.metrics != nil {
		r.metrics.Forget(key.Namespace, key.Name)
	}
}

// Skip leaves a cluster another controller manages alone. Every cluster
// has its info series, as with KubeRay's collector: also those skipped,
// invalid or being deleted.
func (r *Reconciler) Skip(ctx context.Context, cluster *rayv1.RayCluster) bool {
	if r.metrics != nil {
		r.metrics.SetInfo(cluster)
	}
	if manager, external := cluster.Spec.ExternalManager(); external {
		ctrl.LoggerFrom(ctx).V(1).Info("skipping a RayCluster managed by another controller", "managedBy", manager)
		return true
	}
	return false
}

// Validate checks the cluster's metadata and spec; Status shows what it
// refuses.
func (r *Reconciler) Validate(_ context.Context, s *scope) error {
	cluster := s.Object
	verr := validation.Validate(cluster, validation.SpecValidationOptions{AllowWorkerGroupSuspend: r.cfg.AllowWorkerGroupSuspend})
	if verr == nil {
		return nil
	}
	r.recorder.Warning(cluster, string(verr.EventReason()), "%s", verr.EventMessage(cluster.Namespace, cluster.Name))
	return verr
}

// UserError: an invalid cluster is not retried (the user's next edit
// triggers a reconcile); its status says why nothing happens.
func (r *Reconciler) UserError(err error) bool {
	var verr *validation.ValidationError
	return errors.As(err, &verr) && !verr.Transient()
}

// Finalize adds the GCS fault tolerance finalizer and, once the cluster is
// being deleted, runs its Redis cleanup.
func (r *Reconciler) Finalize(ctx context.Context, s *scope) (bool, error) {
	res, handled, err := r.reconcileGCSFTFinalizer(ctx, s.Object)
	s.Requeue.After(res.RequeueAfter)
	if !handled && !s.Object.DeletionTimestamp.IsZero() {
		ctrl.LoggerFrom(ctx).V(1).Info("RayCluster is being deleted")
	}
	return handled, err
}

// Load reads the cluster's Pods, once for the whole reconcile.
func (r *Reconciler) Load(ctx context.Context, s *scope) error { return r.loadPods(ctx, s) }

// Steps converge the cluster's objects. The head Pod cannot start without
// the autoscaler's account or the auth token Secret, so a failure there
// stops the reconcile, as KubeRay's chain does. A Service or Ingress that
// fails (a quota, an immutable field, a webhook) must not hold up the
// Pods: it gets its Warning event and the Pods are reconciled anyway;
// workers wait for the head on their own. A head or headless Service name
// held by an object the cluster does not control (a user's) does hold
// them up, as in KubeRay: the workers would reach whatever it selects.
func (r *Reconciler) Steps(*scope) []syncsteps.Step[*scope] {
	return []syncsteps.Step[*scope]{
		// Its Warning is KubeRay's AutoscalerServiceAccountNotFound.
		{Name: "AutoscalerServiceAccount", Sync: r.checkAutoscalerServiceAccount, StopOnError: true, ReportsOwnFailure: true},
		{Name: "AutoscalerRBAC", Sync: r.reconcileAutoscalerRBAC, StopOnError: true},
		{Name: "AuthSecret", Sync: r.reconcileAuthSecret, StopOnError: true},
		{Name: "Ingress", Sync: r.reconcileIngress, FailureReason: string(rayv1.FailedToCreateIngress)},
		{Name: "HeadService", Sync: r.reconcileHeadService, FailureReason: string(rayv1.FailedToCreateService)},
		{Name: "HeadlessService", Sync: r.reconcileHeadlessService, FailureReason: string(rayv1.FailedToCreateService)},
		{Name: "ServeService", Sync: r.reconcileServeService, FailureReason: string(rayv1.FailedToCreateService)},
		// Pod failures emit their own KubeRay-named Warning events.
		// Skipped while a user's object holds the head or headless
		// Service's name (resources.go, reconcileHeadService).
		{Name: "Pods", Sync: r.reconcilePods, ReportsOwnFailure: true,
			Skip: func(s *scope) bool { return s.servicesNotOwned }},
	}
}

// Status writes the cluster's status: an invalid cluster's, or the one
// its Pods show.
func (r *Reconciler) Status(ctx context.Context, s *scope, reconcileErr error) error {
	cluster := s.Object
	var verr *validation.ValidationError
	if errors.As(reconcileErr, &verr) {
		if verr.Transient() {
			s.Requeue.After(InvalidStatusRequeueDelay)
			return nil
		}
		// A user error: retrying cannot fix it and the user's next edit
		// triggers a reconcile. As KubeRay, the Warning event (Validate)
		// says why; the status is left as it is, since the Pods the
		// cluster has keep running.
		return nil
	}
	if reconcileErr != nil {
		ctrl.LoggerFrom(ctx).Error(reconcileErr, "reconciling RayCluster")
	}
	// What the Pod decisions read. The status written, or the API server's
	// when the write's Conflict read the cluster again (the cache lagging
	// an earlier write), can differ from it.
	read := rayv1.RayClusterStatus{Conditions: slices.Clone(cluster.Status.Conditions)}
	before, statusErr := r.updateStatus(ctx, s, errors.Join(reconcileErr, s.podLimit))
	if s.podLimit != nil && !podLimitReported(&before) && statusErr == nil {
		// Once per transition, after the status shows it, not on every
		// reconcile of a cluster that stays over the limit.
		r.recorder.Warning(cluster, ReasonPodLimitExceeded, "%s", replicaFailureMessage(s.podLimit))
	}
	if r.metrics != nil {
		// Again: the status just written may have turned provisioned.
		r.metrics.SetInfo(cluster)
	}
	if reconcileErr != nil || statusErr != nil || nextStepReads(read, cluster.Status) {
		s.Requeue.After(ShortRequeue)
	} else {
		s.Requeue.After(r.cfg.DefaultRequeue)
	}
	return statusErr
}

// nextStepReads reports whether the status now differs from the one the
// Pod decisions read in what they read, so the next step of a transition
// waits for the quick requeue rather than for an event: the suspend state
// machine (Suspending, then the Pods deleted, then Suspended; and Suspended
// ending on resume, before Pods are created) has no Pod event to move it
// on. The difference is this reconcile's write, or an earlier one the
// cache had not shown it. KubeRay requeues after every status write; a
// write that only reports what the Pods did (ready counts, state ready,
// the head's address) leaves nothing to do, and the quick requeue would
// cost every new cluster a third reconcile in the queue all clusters wait
// in.
func nextStepReads(before, after rayv1.RayClusterStatus) bool {
	for _, t := range []rayv1.RayClusterConditionType{rayv1.RayClusterSuspending, rayv1.RayClusterSuspended} {
		if meta.IsStatusConditionTrue(before.Conditions, string(t)) != meta.IsStatusConditionTrue(after.Conditions, string(t)) {
			return true
		}
	}
	return false
}

// podLimitReported reports whether status already shows the pod limit.
func podLimitReported(status *rayv1.RayClusterStatus) bool {
	c := meta.FindStatusCondition(status.Conditions, string(rayv1.RayClusterReplicaFailure))
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == ReasonPodLimitExceeded
}

// NewScope starts one reconcile of cluster.
func (r *Reconciler) NewScope(cluster *rayv1.RayCluster) *scope { return newScope(cluster) }

// newScope starts a reconcile whose Normal events are one per reason, the
// reasons KubeRay records for the same changes (CreatedHeadPod,
// CreatedWorkerPod, CreatedService, ...), so alerts keyed on them work.
func newScope(cluster *rayv1.RayCluster) *scope {
	return &scope{Base: syncsteps.Base[*rayv1.RayCluster]{Object: cluster}}
}

// scope is what the steps of one reconcile share.
type scope struct {
	syncsteps.Base[*rayv1.RayCluster]
	// headService is the head Service as applied or observed in this
	// reconcile; the cache may not have it yet.
	headService *corev1.Service
	// podLimit is set when the spec asks for more Pods than
	// --ray-max-pods-per-cluster allows: no worker Pod is created, and
	// status shows it as a ReplicaFailure.
	podLimit error
	// pods are the cluster's Pods as Load read them from the cache
	// (podsLoaded), and satisfiedAtLoad which Pod groups' expectations the
	// cache had met before it: every step reads them (listPods).
	pods               []corev1.Pod
	podsLoaded         bool
	satisfiedAtLoad    map[string]bool
	allSatisfiedAtLoad bool
	// podsChanged is set once this reconcile has created or deleted a Pod
	// (never before the request succeeded): the cache cannot show the
	// result yet, so status usually waits for the next round.
	podsChanged bool
	// podEvents are the Pods created and deleted in bulk, moved into
	// Events (one message per reason) when the Pods are done.
	podEvents podEvents
	// servicesNotOwned is set when the head or headless Service's name is
	// held by an object the cluster does not control: the Pods step is
	// skipped, as KubeRay's reconcile ends at the failed Service.
	servicesNotOwned bool
}

// updateStatus computes the status from the cached Pods and writes it when
// InconsistentRayClusterStatus says it changed. It reports whether the
// status changed, which asks for a quick requeue so multi-step transitions
// (suspend) progress, and the status the new one was compared with: the
// cached one, or the API server's when a Conflict made status.Update read
// the cluster again (so a transition another reconcile already wrote is
// not reported twice).

// updateStatus writes the cluster's status when it changed, and returns
// the status it last compared against (the cluster's, or the API server's
// after a Conflict).
func (r *Reconciler) updateStatus(ctx context.Context, s *scope, reconcileErr error) (before rayv1.RayClusterStatus, err error) {
	cluster := s.Object
	before = *cluster.Status.DeepCopy()
	key := client.ObjectKeyFromObject(cluster).String()
	replicaFailure := ReplicaFailureReason(reconcileErr) != ""
	if !replicaFailure && (s.podsChanged || !s.allSatisfiedAtLoad || !r.expectations.SatisfiedAll(key)) {
		// The cache lags our own creates and deletes; a status computed now
		// would be wrong and cost a write. The pod events requeue us.
		return before, nil
	}
	// A create or delete the API server refused (quota, Pod Security, a
	// webhook) is written at once, as KubeRay does: no Pod event will come
	// to requeue us, and the user must see the ReplicaFailure condition
	// now. Counts may lag by the Pods this reconcile did manage to change;
	// the next reconcile corrects them.
	pods, err := r.listPods(ctx, s, nil)
	if err != nil {
		return before, err
	}
	headSvc := s.headService
	if headSvc == nil {
		headSvc = &corev1.Service{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: podspec.HeadServiceName(cluster)}, headSvc); err != nil {
			if !apierrors.IsNotFound(err) {
				return before, err
			}
			headSvc = nil
		}
	}
	now := r.clock.Now()
	opts := StatusOptions{ConditionsEnabled: r.cfg.StatusConditions, Now: now, ReconcileErr: reconcileErr}
	// status.Update reads the cluster again and calls mutate again on a
	// Conflict, so the new status is computed from the copy it hands over,
	// and before becomes the status of the copy last compared.
	written, err := status.Update(ctx, r.client, cluster, func(c *rayv1.RayCluster) error {
		newStatus, err := CalculateStatus(c, pods, headSvc, opts)
		if err != nil {
			return err
		}
		before = *c.Status.DeepCopy()
		c.Status = *newStatus
		return nil
	}, status.WithEqual(func(old, updated *rayv1.RayCluster) bool {
		return !InconsistentRayClusterStatus(old.Status, updated.Status)
	}))
	if err != nil {
		return before, err
	}
	if written && r.metrics != nil {
		r.metrics.ObserveStatusWrite(cluster, before, now)
	}
	return before, nil
}
