package rayjob

import (
	"context"
	"errors"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	Name = "rayjob"
	// ControllerName names the controller in events.
	ControllerName = "rayjob-controller"
	// DefaultRequeue is how often a RayJob that has not ended is looked at
	// again (KubeRay's RayJobDefaultRequeueDuration): the Ray job's status
	// is polled from the dashboard.
	DefaultRequeue = 3 * time.Second
)

// +kubebuilder:rbac:groups=ray.io,resources=rayjobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// With --use-kubernetes-proxy the dashboard is reached through services/proxy.
// +kubebuilder:rbac:groups="",resources=services/proxy,verbs=get;create

// Reconciler reconciles RayJobs.
type Reconciler struct {
	skeleton.Skeleton[*rayv1.RayJob, *scope]
	client     client.Client
	apiReader  client.Reader
	recorder   events.Recorder
	dashboards *dashboards.Clients
	metrics    *JobMetrics
	cfg        Config
	clock      clock.PassiveClock
	workers    int
}

// Options configure a RayJob Reconciler.
type Options struct {
	workload.Options
	Config     Config
	Dashboards *dashboards.Clients
}

// New builds the RayJob reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	metrics, err := NewJobMetrics(o.RegistererOrDefault())
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
func newReconciler(c client.Client, apiReader client.Reader, recorder clientevents.EventRecorder, d *dashboards.Clients, metrics *JobMetrics, cfg Config) *Reconciler {
	if d == nil {
		d = &dashboards.Clients{Secrets: apiReader}
	}
	r := &Reconciler{
		client:     c,
		apiReader:  apiReader,
		recorder:   events.NewRecorderWithActions(recorder, eventActions),
		dashboards: d,
		metrics:    metrics,
		cfg:        cfg.withDefaults(),
		clock:      clock.RealClock{},
		workers:    1,
	}
	r.Skeleton = skeleton.New(c, r.recorder, skeleton.Workload[*rayv1.RayJob, *scope](r), skeleton.Options{})
	return r
}

// SetupWithManager registers the controller and its watches: the RayJob,
// and the RayCluster, Service and submitter Job it owns.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return workload.NewController(mgr, Name, &rayv1.RayJob{}, r.workers).
		Owns(&rayv1.RayCluster{}).
		Owns(&corev1.Service{}).
		Owns(&batchv1.Job{}).
		Complete(r)
}

// A RayJob's reconcile runs on the framework's skeleton: Skip (another
// manager's job) → Validate → Finalize (the stop-job finalizer) → Load
// (its cluster and submitter) → one step, the state the job is in (see
// states.go) → Status, the one status write → the soonest requeue.

// NewObject is an empty RayJob.
func (r *Reconciler) NewObject() *rayv1.RayJob { return &rayv1.RayJob{} }

// NewScope starts one reconcile of job.
func (r *Reconciler) NewScope(job *rayv1.RayJob) *scope {
	return &scope{Base: syncsteps.Base[*rayv1.RayJob]{Object: job}, observed: *job.Status.DeepCopy(), now: r.clock.Now()}
}

// Forget drops the metric series of a RayJob that is gone.
func (r *Reconciler) Forget(key types.NamespacedName) {
	if r.metrics != nil {
		r.metrics.Forget(key.Namespace, key.Name)
	}
}

// Skip leaves a RayJob that MultiKueue manages alone.
func (r *Reconciler) Skip(ctx context.Context, job *rayv1.RayJob) bool {
	if r.metrics != nil {
		r.metrics.SetInfo(job)
	}
	if m := job.Spec.ManagedBy; m != nil && *m != rayv1.KubeRayController {
		ctrl.LoggerFrom(ctx).V(1).Info("skipping a RayJob managed by another controller", "managedBy", *m)
		return true
	}
	return false
}

// Validate checks the RayJob's metadata, spec and status. A RayJob being
// deleted is not validated: its finalizer must run whatever its spec.
func (r *Reconciler) Validate(_ context.Context, s *scope) error {
	job := s.Object
	if job.DeletionTimestamp != nil {
		return nil
	}
	verr := validate(job, r.cfg)
	if verr == nil {
		return nil
	}
	r.recorder.Warning(job, string(verr.EventReason()), "%s/%s: %v", job.Namespace, job.Name, verr.Err)
	return verr
}

// UserError: an invalid RayJob waits for the user's edit.
func (r *Reconciler) UserError(err error) bool {
	var verr *validation.RayJobValidationError
	return errors.As(err, &verr)
}

// Finalize stops the Ray job of a RayJob being deleted, then lets it go,
// and adds the finalizer to a new RayJob, as KubeRay does.
func (r *Reconciler) Finalize(ctx context.Context, s *scope) (bool, error) {
	job := s.Object
	if job.DeletionTimestamp == nil {
		if job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusNew {
			_, err := finalizers.Add(ctx, r.client, job, rayv1.RayJobStopJobFinalizer)
			return err != nil, err
		}
		return false, nil
	}
	if !rayv1.IsJobTerminal(job.Status.JobStatus) {
		r.stopJob(ctx, job)
	}
	// The finalizer goes whether the stop succeeded or not (as KubeRay):
	// a cluster that cannot be reached must not hold the RayJob forever;
	// the cluster itself goes with the RayJob.
	_, err := finalizers.Remove(ctx, r.client, job, rayv1.RayJobStopJobFinalizer)
	return true, err
}

// stopJob asks the dashboard to stop the RayJob's Ray job; a failure is
// only logged.
func (r *Reconciler) stopJob(ctx context.Context, job *rayv1.RayJob) {
	log := ctrl.LoggerFrom(ctx)
	if job.Status.JobId == "" {
		return
	}
	var cluster *rayv1.RayCluster
	if job.Status.RayClusterName != "" {
		c := &rayv1.RayCluster{}
		if err := r.client.Get(ctx, clusterKey(job), c); err == nil {
			cluster = c
		} else if !apierrors.IsNotFound(err) {
			log.Error(err, "reading the RayCluster to stop the Ray job")
		}
	}
	if cluster == nil && job.Status.DashboardURL == "" {
		return
	}
	dash, err := r.dashboards.For(ctx, cluster, job.Status.DashboardURL)
	if err == nil {
		err = dash.StopJob(ctx, job.Status.JobId)
	}
	if err != nil {
		log.Error(err, "stopping the Ray job of a deleted RayJob", "jobId", job.Status.JobId)
	}
}

// Load reads the RayJob's cluster (and, in K8sJobMode, its submitter Job)
// once for the reconcile.
func (r *Reconciler) Load(ctx context.Context, s *scope) error {
	job := s.Object
	if job.Status.RayClusterName != "" {
		cluster := &rayv1.RayCluster{}
		switch err := r.client.Get(ctx, clusterKey(job), cluster); {
		case err == nil:
			s.cluster = cluster
		case !apierrors.IsNotFound(err):
			return err
		}
	}
	if job.Spec.SubmissionMode == rayv1.K8sJobMode || job.Spec.SubmissionMode == "" {
		submitter := &batchv1.Job{}
		switch err := r.client.Get(ctx, submitterKey(job), submitter); {
		case err == nil:
			s.submitter = submitter
		case !apierrors.IsNotFound(err):
			return err
		case submitterExpected(job.Status.JobDeploymentStatus):
			return r.loadUncachedSubmitter(ctx, s)
		}
	}
	return nil
}

// submitterExpected: in these states a K8sJobMode RayJob's submitter Job
// exists (Running follows it; Suspending and Retrying delete it) unless
// someone deleted it.
func submitterExpected(state rayv1.JobDeploymentStatus) bool {
	switch state {
	case rayv1.JobDeploymentStatusRunning, rayv1.JobDeploymentStatusSuspending, rayv1.JobDeploymentStatusRetrying:
		return true
	}
	return false
}

// loadUncachedSubmitter looks past the cache for a submitter Job the cache
// does not hold: the one KubeRay's operator created for a RayJob it was
// running before the move to Gantry carries no app.kubernetes.io/managed-by
// label. The RayJob takes it over when it controls it. In Running a Job of
// that name it does not control is an error; in Suspending and Retrying it
// is not the RayJob's to delete, and is left alone.
func (r *Reconciler) loadUncachedSubmitter(ctx context.Context, s *scope) error {
	existing, err := r.adopt(ctx, s.Object, &batchv1.Job{}, submitterKey(s.Object))
	switch {
	case err == nil:
		s.submitter = existing.(*batchv1.Job)
	case apierrors.IsNotFound(err):
	case errors.Is(err, errNotControlled) && s.Object.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusRunning:
	default:
		return err
	}
	return nil
}

// Steps is one step: the state the RayJob is in.
func (r *Reconciler) Steps(s *scope) []syncsteps.Step[*scope] {
	state := s.Object.Status.JobDeploymentStatus
	name := string(state)
	if name == "" {
		name = "New"
	}
	return []syncsteps.Step[*scope]{{Name: name, Sync: r.advance}}
}

// scope is what one reconcile of a RayJob knows.
type scope struct {
	syncsteps.Base[*rayv1.RayJob]
	// observed is the status as read; the steps change Object's.
	observed rayv1.RayJobStatus
	now      time.Time
	// cluster and submitter are the RayJob's, as Load read them (nil when
	// there are none) or the steps created them.
	cluster   *rayv1.RayCluster
	submitter *batchv1.Job
	// hold means the state's handler returned without a status change to
	// make: nothing is written, not even the retry counters (KubeRay's
	// early returns).
	hold bool
}

func clusterKey(job *rayv1.RayJob) types.NamespacedName {
	return types.NamespacedName{Namespace: job.Namespace, Name: job.Status.RayClusterName}
}

// submitterKey names the submitter Job: the RayJob's own name.
func submitterKey(job *rayv1.RayJob) types.NamespacedName {
	return types.NamespacedName{Namespace: job.Namespace, Name: job.Name}
}
