package trainjob

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/apply"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	skeleton "github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/runtime"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/trainjobstatus"
)

// ControllerName names the controller in logs and events.
const ControllerName = "trainjob-controller"

// FieldOwner is the field manager of every object the TrainJob controller
// applies: upstream Trainer's, so that objects Trainer applied are owned
// by the same manager after a switch.
const FieldOwner = "trainer"

// Event reasons besides the condition reasons, which double as event reasons.
const (
	// ReasonRuntimeWarning carries a warning the runtime build left (e.g. a
	// coscheduling policy without the PodGroup CRD).
	ReasonRuntimeWarning = "RuntimeWarning"
	// ReasonResized: an elastic job's JobSet got another node count.
	ReasonResized = "Resized"
	// ReasonResourcesCreationFailed is Trainer v2.3's Warning reason for a
	// build or an apply that failed; the Created condition carries Gantry's
	// finer reason.
	ReasonResourcesCreationFailed = "TrainJobResourcesCreationFailed"
)

// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainingruntimes,verbs=get;list;watch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes,verbs=get;list;watch
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups="",resources=pods,verbs=get

// Reconciler reconciles TrainJobs.
type Reconciler struct {
	// Skeleton runs the reconcile (Reconcile) through this Reconciler's
	// phases.
	skeleton.Skeleton[*trainer.TrainJob, *scope]
	// client reads from the manager's cache and writes to the API server.
	client client.Client
	// apiReader reads past the cache; used only to confirm that a runtime
	// is really missing before failing a job for good.
	apiReader client.Reader
	runtime   *runtime.Runtime
	applier   apply.Applier
	recorder  events.Recorder
	metrics   *Metrics
	clock     clock.PassiveClock
	// runtimeGrace is RuntimeNotFoundGrace; tests shorten it.
	runtimeGrace time.Duration
	// workers is the number of TrainJobs reconciled in parallel.
	workers int
	// statusWindow holds changes of jobsStatus alone (StatusWindow).
	statusWindow *status.Coalescer
	// started is when this reconciler was built: a job created since with
	// no JobSet yet has no Trainer snapshot to look for
	// (trainerMayHaveSnapshot).
	started time.Time
}

// Options configure a TrainJob Reconciler.
type Options struct {
	workload.Options
	// ProgressConditions adds Gantry's Created and Running conditions
	// (the TrainJobProgressConditions gate); nil reads the gate from
	// Features.
	ProgressConditions *bool
	// RuntimeNotFoundGrace is how long a job waits for a missing runtime;
	// 0 means RuntimeNotFoundGrace.
	RuntimeNotFoundGrace time.Duration
	// Client replaces the manager's client for reads and writes (tests wrap
	// it to inject faults); nil means mgr.GetClient().
	Client client.Client
	// APIReader replaces the manager's uncached reader (tests count what
	// is read past the cache); nil means mgr.GetAPIReader().
	APIReader client.Reader
	// StatusServer tells trainer pods where to report progress (gate
	// TrainJobStatus); nil tells them nothing.
	StatusServer *trainjobstatus.Config
}

// New builds the TrainJob reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	metrics, err := NewMetrics(o.RegistererOrDefault())
	if err != nil {
		return nil, err
	}
	progress := o.Features != nil && o.Features.Enabled(ProgressConditions)
	if o.ProgressConditions != nil {
		progress = *o.ProgressConditions
	}
	rt, err := runtime.New(runtime.Options{
		Existing: mgr.GetClient(), RESTMapper: mgr.GetRESTMapper(), ProgressConditions: progress, StatusServer: o.StatusServer,
		ElasticPyTorch: o.Features != nil && o.Features.Enabled(ElasticPyTorch),
		ClusterDomain:  os.Getenv("CLUSTER_DOMAIN"),
	})
	if err != nil {
		return nil, err
	}
	c := o.Client
	if c == nil {
		c = mgr.GetClient()
	}
	apiReader := o.APIReader
	if apiReader == nil {
		apiReader = mgr.GetAPIReader()
	}
	r := &Reconciler{
		client:    c,
		apiReader: apiReader,
		runtime:   rt,
		applier: apply.Applier{Client: c, FieldOwner: FieldOwner,
			Trimmed: apply.NewTrimmed(apiReader, &jobsetv1alpha2.JobSet{})},
		recorder:     events.NewRecorder(mgr.GetEventRecorder(ControllerName)),
		metrics:      metrics,
		clock:        o.ClockOrReal(),
		runtimeGrace: o.RuntimeNotFoundGrace,
		workers:      o.Workers(),
	}
	r.statusWindow = status.NewCoalescer(StatusWindow, r.clock)
	r.started = r.clock.Now()
	if r.runtimeGrace == 0 {
		r.runtimeGrace = RuntimeNotFoundGrace
	}
	return r.withSkeleton(), nil
}

// withSkeleton sets the reconcile skeleton over r's client and recorder.
func (r *Reconciler) withSkeleton() *Reconciler {
	r.Skeleton = skeleton.New(r.client, r.recorder, skeleton.Workload[*trainer.TrainJob, *scope](r), skeleton.Options{})
	return r
}

// SetupWithManager registers the controller and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return r.setupWithManager(mgr, r)
}

// setupWithManager lets tests observe reconciles by wrapping r.
func (r *Reconciler) setupWithManager(mgr ctrl.Manager, rec reconcile.Reconciler) error {
	return workload.NewController(mgr, Name, &trainer.TrainJob{}, r.workers, predicate.Or(workload.SpecChanged, turnedFinished)).
		Owns(&jobsetv1alpha2.JobSet{}).
		Owns(&corev1.ConfigMap{}).
		// Metadata only: owning Secrets must not put every Secret's data in
		// the cache.
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		// A runtime that appears starts the jobs that were waiting for it.
		Watches(&trainer.ClusterTrainingRuntime{}, handler.EnqueueRequestsFromMapFunc(r.trainJobsWaitingFor(trainer.ClusterTrainingRuntimeKind)),
			builder.WithPredicates(createdOnly)).
		Watches(&trainer.TrainingRuntime{}, handler.EnqueueRequestsFromMapFunc(r.trainJobsWaitingFor(trainer.TrainingRuntimeKind)),
			builder.WithPredicates(createdOnly)).
		Complete(rec)
}

// The TrainJob's reconcile runs on the framework's skeleton: Skip (another
// manager's job) → Load (its JobSet) → Steps (a running job's deadline,
// runtime, build and apply; a finished job's TTL) → Status, the one status
// write, which also reports a failed build → the soonest requeue.

// NewObject is an empty TrainJob.
func (r *Reconciler) NewObject() *trainer.TrainJob { return &trainer.TrainJob{} }

// Forget drops what the process keeps about a TrainJob that is gone.
func (r *Reconciler) Forget(key types.NamespacedName) {
	r.metrics.Forget(key.Namespace, key.Name)
	r.applier.Trimmed.Forget(key)
	r.statusWindow.Close(key)
}

// Skip leaves a TrainJob managed by another controller (MultiKueue) alone.
func (r *Reconciler) Skip(ctx context.Context, trainJob *trainer.TrainJob) bool {
	managedBy := ptr.Deref(trainJob.Spec.ManagedBy, trainer.TrainJobControllerManagedBy)
	if managedBy == trainer.TrainJobControllerManagedBy {
		return false
	}
	ctrl.LoggerFrom(ctx).V(2).Info("skipping a TrainJob managed by another controller", "managedBy", managedBy)
	return true
}

// NewScope starts one reconcile of trainJob.
func (r *Reconciler) NewScope(trainJob *trainer.TrainJob) *scope {
	return &scope{Base: syncsteps.Base[*trainer.TrainJob]{Object: trainJob}}
}

// Load reads the TrainJob's JobSet.
func (r *Reconciler) Load(ctx context.Context, s *scope) (err error) {
	s.jobSet, err = r.currentJobSet(ctx, s.Object)
	return err
}

// UserError reports a build failure no retry can fix (a missing runtime,
// one Gantry cannot run, an invalid job or runtime): the status shows it
// and the watches bring the job back once something changes.
func (r *Reconciler) UserError(err error) bool {
	_, terminal := terminalFailure(err)
	return terminal || runtime.IsBuildError(err) || runtime.IsRuntimeNotFound(err)
}

// scope is what one TrainJob reconcile knows.
type scope struct {
	syncsteps.Base[*trainer.TrainJob]
	// jobSet is the TrainJob's JobSet, as read or as applied.
	jobSet *jobsetv1alpha2.JobSet
	// spec is the resolved runtime's spec.
	spec *trainer.TrainingRuntimeSpec
	// fromSnapshot: spec is the runtime the job was created with, not
	// the live runtime.
	fromSnapshot bool
	// snapshotInConfigMap: that snapshot was read from the job's
	// <job>-runtime-snapshot ConfigMap (Trainer's, or Gantry's own for a
	// runtime too big for the JobSet's annotations).
	snapshotInConfigMap bool
	// snapshotConfigMap is the snapshot the build took from the live
	// runtime and found too big for the JobSet: apply writes it first.
	snapshotConfigMap *corev1.ConfigMap
	// objects is what the runtime built from the TrainJob and its runtime.
	objects *runtime.Result
	// resolved: resolveRuntime ran, and resolveErr is what it returned
	// (the run policy may need the runtime before the build does).
	resolved   bool
	resolveErr error
	// deadline is where a running job stands against its active deadline.
	deadline deadline
	// noStatus: a step acted on a decision the status already shows (or
	// deleted the TrainJob), and failed or made the write moot: no status
	// write this time.
	noStatus bool
}

// Steps are a finished job's TTL, or a running job's deadline and build.
// Each failure is reported by Status (the Created or Failed condition and
// its event), so the steps report none themselves.
func (r *Reconciler) Steps(s *scope) []syncsteps.Step[*scope] {
	if trainer.IsFinished(s.Object.Status.Conditions) {
		return []syncsteps.Step[*scope]{{Name: "TTL", Sync: r.expireFinished, ReportsOwnFailure: true}}
	}
	exceeded := func(s *scope) bool { return s.deadline.exceeded }
	return []syncsteps.Step[*scope]{
		{Name: "Deadline", Sync: r.enforceDeadline, StopOnError: true, ReportsOwnFailure: true},
		{Name: "Runtime", Sync: r.resolveRuntime, Skip: exceeded, StopOnError: true, ReportsOwnFailure: true},
		{Name: "Build", Sync: r.build, Skip: exceeded, StopOnError: true, ReportsOwnFailure: true},
		{Name: "Apply", Sync: r.apply, Skip: exceeded, StopOnError: true, ReportsOwnFailure: true},
	}
}

// build renders the TrainJob and its runtime into objects, and records the
// runtime snapshot on the JobSet it builds, or in a ConfigMap of its own
// when it is too big for that (stampRuntimeSnapshot).
func (r *Reconciler) build(ctx context.Context, s *scope) error {
	s.snapshotConfigMap = nil
	objs, err := r.runtime.NewObjects(ctx, s.Object, s.spec)
	s.objects = objs
	if err != nil {
		return err
	}
	for _, comp := range objs.Components {
		if js, ok := comp.Object.(*jobsetv1alpha2.JobSet); ok {
			if err := s.stampRuntimeSnapshot(js); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply writes the built objects and notes what it created.
func (r *Reconciler) apply(ctx context.Context, s *scope) error {
	trainJob := s.Object
	trainerJob, nodesBefore := trainerNodes(s.objects.Info, s.jobSet)
	if s.snapshotConfigMap != nil {
		// Before the JobSet: no JobSet is built from a snapshot that is
		// not kept.
		if err := r.writeSnapshotConfigMap(ctx, s.snapshotConfigMap); err != nil {
			return err
		}
	}
	created, appliedJobSet, err := r.applyComponents(ctx, s.objects.Components)
	if err != nil {
		return err
	}
	if appliedJobSet != nil {
		s.jobSet = appliedJobSet
		if _, nodesAfter := trainerNodes(s.objects.Info, appliedJobSet); nodesBefore > 0 && nodesAfter != nodesBefore {
			r.recorder.Normal(trainJob, ReasonResized, "Resized replicated job %s of JobSet %s from %d to %d nodes", trainerJob, appliedJobSet.Name, nodesBefore, nodesAfter)
		}
	}
	if slices.Contains(created, "JobSet "+trainJob.Name) {
		r.metrics.ObserveCreated(trainJob.Namespace)
	}
	if len(created) > 0 {
		// Warnings describe the build, which only matters when it first lands.
		for _, w := range s.objects.Warnings {
			r.recorder.Warning(trainJob, ReasonRuntimeWarning, "%s", w)
		}
	}
	return nil
}

// expireFinished deletes a finished job once its ttlSecondsAfterFinished
// has passed, and until then asks to be reconciled when it will have. A
// finished job keeps its JobSet mirrored (its counters still move after
// the terminal condition) but is never built again: one whose JobSet was
// removed by JobSet's TTL must not start over.
func (r *Reconciler) expireFinished(ctx context.Context, s *scope) error {
	trainJob, jobSet := s.Object, s.jobSet
	policy := r.finishedRunPolicy(ctx, trainJob, jobSet)
	tl := ttlAfterFinished(trainJob, policy.ttlSecondsAfterFinished, r.clock.Now())
	if tl.expired {
		// No status write first: the TrainJob is going.
		s.noStatus = true
		return r.deleteExpired(ctx, trainJob, policy, tl)
	}
	s.Requeue.After(tl.remaining)
	if jobSet != nil && deadlineExceeded(trainJob.Status.Conditions) {
		// The status write of an earlier expiry landed but its delete may
		// not have.
		s.noStatus = true
		return r.deleteJobSet(ctx, jobSet)
	}
	return nil
}

// Status writes the TrainJob's status, once per reconcile: a finished
// job's mirrored JobSet, a deadline's failure, a failed build (Created
// False, or Failed for good), or a build that landed.
func (r *Reconciler) Status(ctx context.Context, s *scope, err error) error {
	trainJob := s.Object
	switch {
	case s.noStatus:
		return nil
	case trainer.IsFinished(trainJob.Status.Conditions):
		_, held, err := r.writeStatus(ctx, trainJob, s.jobSet, outcome{})
		s.Requeue.After(held)
		return err
	case s.deadline.exceeded:
		return r.failDeadlineExceeded(ctx, trainJob, s.deadline)
	case err != nil:
		return r.reportBuildFailure(ctx, s, err)
	}
	succeeded := runtime.CreatedCondition(nil)
	_, held, werr := r.writeStatus(ctx, trainJob, s.jobSet, outcome{created: &succeeded})
	s.Requeue.After(held)
	return werr
}

// reportBuildFailure shows an error from resolving, building or applying
// as the cases a user sees differently (UserError decides which are
// retried with back-off):
//   - the runtime is missing: Created=False while it may still appear
//     (RuntimeNotFoundGrace from the job's creation; its creation wakes the
//     job), then terminal Failed;
//   - the runtime is of a kind Gantry cannot run: terminal Failed, no retry
//     (a new TrainJob is the fix);
//   - the TrainJob or runtime is invalid: Created=False, no retry until the
//     TrainJob changes;
//   - anything else is transient: Created=False until it succeeds, and the
//     error goes back to the work queue for a retry with backoff.
func (r *Reconciler) reportBuildFailure(ctx context.Context, s *scope, buildErr error) error {
	trainJob, jobSet := s.Object, s.jobSet
	created := runtime.CreatedCondition(buildErr)
	failed, terminal := terminalFailure(buildErr)
	if runtime.IsRuntimeNotFound(buildErr) {
		if left := r.runtimeGraceLeft(trainJob); left > 0 {
			terminal = false
			created.Message = fmt.Sprintf("%s; the TrainJob fails unless it exists by %s",
				created.Message, trainJob.CreationTimestamp.Add(r.runtimeGrace).UTC().Format(time.RFC3339))
			s.Requeue.After(left)
		}
	}
	o := outcome{}
	// An existing JobSet was created and may be running: a runtime deleted
	// or edited since only matters for the next build, so it is reported
	// as an event and neither undoes Created nor fails a healthy run.
	if jobSet == nil {
		o.created = &created
		if terminal {
			o.failed = &failed
		}
	}
	changed, held, err := r.writeStatus(ctx, trainJob, jobSet, o)
	s.Requeue.After(held)
	if changed || jobSet != nil {
		if o.failed != nil {
			r.recorder.Warning(trainJob, o.failed.Reason, "%s", created.Message)
		} else {
			r.recorder.Warning(trainJob, ReasonResourcesCreationFailed, "%s", resourcesFailedMessage(created.Message))
		}
	}
	return err
}

// resourcesFailedMessage is Trainer v2.3's event message for a failed
// build or apply: the cause cut to 950 characters, which keeps the event
// within the API's 1024.
func resourcesFailedMessage(cause string) string {
	const limit = 950
	if len(cause) <= limit {
		return "TrainJob resources reconciliation failed: " + cause
	}
	return "TrainJob resources reconciliation failed: " + cause[:limit] + " ..."
}

// terminalFailure is the Failed condition for errors no edit of this
// TrainJob can fix. A missing runtime counts: upstream fails such jobs and
// users resubmit, so a job never silently starts long after it was created.
func terminalFailure(err error) (metav1.Condition, bool) {
	if runtime.IsRuntimeNotFound(err) {
		return metav1.Condition{
			Type:    trainer.TrainJobFailed,
			Status:  metav1.ConditionTrue,
			Reason:  trainer.TrainJobRuntimeNotFoundReason,
			Message: err.Error(),
		}, true
	}
	return runtime.FailedCondition(err)
}

// resolveRuntime takes the runtime the job was created with (its snapshot,
// resolveSnapshot), or else reads the referenced runtime from the cache. A
// miss is checked against the API server: a runtime created just before its
// TrainJob (one `kubectl apply` of both) may not be cached yet, and failing
// the job for good on a stale cache would be wrong.
func (r *Reconciler) resolveRuntime(ctx context.Context, s *scope) error {
	if !s.resolved {
		s.resolved, s.resolveErr = true, r.lookUpRuntime(ctx, s)
	}
	return s.resolveErr
}

func (r *Reconciler) lookUpRuntime(ctx context.Context, s *scope) error {
	snap, err := r.resolveSnapshot(ctx, s)
	if err != nil || snap != nil {
		s.spec, s.fromSnapshot = snap, snap != nil
		return err
	}
	spec, err := runtime.ResolveSpec(ctx, r.client, s.Object)
	if runtime.IsRuntimeNotFound(err) && r.apiReader != nil {
		spec, err = runtime.ResolveSpec(ctx, r.apiReader, s.Object)
	}
	s.spec = spec
	return err
}

func (r *Reconciler) currentJobSet(ctx context.Context, trainJob *trainer.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	js := &jobsetv1alpha2.JobSet{}
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(trainJob), js); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading JobSet %s: %w", client.ObjectKeyFromObject(trainJob), err)
	}
	if !metav1.IsControlledBy(js, trainJob) {
		// Someone else's JobSet with our name: mirroring its state would lie.
		return nil, nil
	}
	return js, nil
}

// trainerNodes is the trainer step's replicated job and its pods per Job
// (parallelism) in jobSet; 0 when either is missing.
func trainerNodes(info *runtime.Info, jobSet *jobsetv1alpha2.JobSet) (string, int32) {
	if info == nil || jobSet == nil {
		return "", 0
	}
	ps := info.TrainerPodSet()
	if ps == nil {
		return "", 0
	}
	for _, rj := range jobSet.Spec.ReplicatedJobs {
		if rj.Name == ps.Name {
			return rj.Name, ptr.Deref(rj.Template.Spec.Parallelism, 1)
		}
	}
	return ps.Name, 0
}
