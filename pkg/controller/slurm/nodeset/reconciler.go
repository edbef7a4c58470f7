package nodeset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	k8sevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/slurmmetrics"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/expectations"
	"github.com/gantry-dev/gantry/pkg/framework/finalizers"
	skeleton "github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-nodeset"

const (
	// expectationGroup: a NodeSet has a single group of pods.
	expectationGroup = "pods"
	// burstReplicas caps the pods created or deleted per reconcile, so one
	// huge scale does not starve other NodeSets of the manager's client.
	burstReplicas = 250
	// drainPollInterval is how often a drain in progress is rechecked:
	// Slurm sends no event when a node's last job ends.
	drainPollInterval = 30 * time.Second
	// slurmPollInterval refreshes the Slurm state counts and deadlines.
	slurmPollInterval = 30 * time.Second
)

// +kubebuilder:rbac:groups=slinky.slurm.net,resources=nodesets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=nodesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=nodesets/scale,verbs=get;update;patch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=nodesets/finalizers,verbs=update
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=controllers,verbs=get;list;watch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=restapis,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles one NodeSet per call. Its APIReader bypasses the
// cache for the few reads that must be fresh (the NodeSet before adopting
// pods, a colliding revision).
type Reconciler struct {
	core.Reconciler
	// Skeleton runs the reconcile (Reconcile) through this Reconciler's
	// phases.
	skeleton.Skeleton[*slinkyv1beta1.NodeSet, *scope]
	clients      ClientSource
	expectations *expectations.Expectations
	// backoff delays the replacement of failed pods (backoff.go).
	backoff *flowcontrol.Backoff
	// Images fill in container images the NodeSet leaves empty.
	Images slinky.Images
	// clock tells the time of pod failures, deadlines and conditions.
	clock clock.PassiveClock
	// metrics may be nil.
	metrics *slurmmetrics.Metrics
	// propagatedNodeConditions are the Kubernetes Node condition types whose
	// reasons and messages become the drain reason of a cordoned Node's
	// Slurm nodes (--propagated-node-conditions).
	propagatedNodeConditions []string
}

// Options configure a NodeSet Reconciler.
type Options struct {
	workload.Options
	// Images override the default images field by field.
	Images slinky.Images
	// Clients gives the Slurm client of a NodeSet's Controller; nil when no
	// Controller will ever have a RestApi.
	Clients ClientSource
	// Metrics publish each NodeSet's pods by state; nil publishes none.
	Metrics *slurmmetrics.Metrics
	// PropagatedNodeConditions is --propagated-node-conditions.
	PropagatedNodeConditions []string
}

// New builds the NodeSet reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	r := newReconciler(mgr.GetClient(), mgr.GetAPIReader(), o.Clients, mgr.GetEventRecorder(Name))
	r.Refs = refresolver.New(core.RefReader(mgr))
	r.Images = o.Images.Or(r.Images)
	r.Workers = o.Workers()
	r.clock = o.ClockOrReal()
	if c, ok := r.clock.(clock.Clock); ok {
		// A pinned clock that can also wait times the back-off too.
		r.backoff = newFailedPodBackoff(c)
	}
	r.metrics = o.Metrics
	r.propagatedNodeConditions = o.PropagatedNodeConditions
	return r, nil
}

// newReconciler returns a reconciler writing through c, reading fresh
// objects through apiReader, taking Slurm clients from clients (nil: no
// Controller has a RestApi) and recording events with recorder (nil
// records none), for New and for tests without a manager.
func newReconciler(c client.Client, apiReader client.Reader, clients ClientSource, recorder k8sevents.EventRecorder) *Reconciler {
	r := &Reconciler{
		Reconciler:   core.New(c, apiReader, recorder),
		clients:      clients,
		expectations: expectations.New(),
		backoff:      newFailedPodBackoff(clock.RealClock{}),
		Images:       slinky.DefaultImages(),
		clock:        clock.RealClock{},
	}
	r.Skeleton = skeleton.New(r.Client, r.Recorder, skeleton.Workload[*slinkyv1beta1.NodeSet, *scope](r), skeleton.Options{StepWarnings: true})
	return r
}

// scope is what the steps of one reconcile share.
type scope struct {
	syncsteps.Base[*slinkyv1beta1.NodeSet]
	key        string
	controller *slinkyv1beta1.Controller
	slurm      *slurmView
	revisions  revisionState
	// pods are the pods the NodeSet controls, as claimed at the start, and
	// workers the same pods with their Slurm node names (deletion.go):
	// both are set by setPods.
	pods    []*corev1.Pod
	workers workers
	// daemon is the DaemonSet-mode plan; nil in StatefulSet mode.
	daemon *daemonPlan
	ssh    sshState
	// revs are the NodeSet's ControllerRevisions, as listed.
	revs []*appsv1.ControllerRevision
	// scalingIn: the Replicas step is scaling in, and scaleInKeep are the
	// pods it ranked to keep, which the rollout then works over.
	scalingIn   bool
	scaleInKeep []*corev1.Pod
	// stepFailed: a step before the rollout failed; rolledOut: the
	// rollout step ran.
	stepFailed, rolledOut bool
	// satisfiedAtLoad: the expectations were met before the pods were
	// listed.
	satisfiedAtLoad bool
	// noted are what the steps did to pods, by pod name, for the events
	// Status reports (events.go). Steps note concurrently, under mu.
	noted struct {
		mu sync.Mutex

		created, adopted, draining, cordonedForNode []string
		// createdOn: DaemonSet mode, the Kubernetes nodes of the created
		// pods.
		createdOn []string
		// deleted: by why (a cordonedFor* value, whyUnregistered or
		// whyExited).
		deleted map[string][]string
		// failed: the exited pods deleted that had failed.
		failed map[string]bool
	}
}

// setPods makes pods the reconcile's claimed pods, each a worker whose
// Slurm node name is computed here, once, for every step; the Slurm view
// learns them too.
func (s *scope) setPods(pods []*corev1.Pod) {
	s.pods, s.workers = pods, newWorkers(pods)
	s.slurm.knowPods(s.Object, s.workers.list)
}

// A NodeSet's reconcile runs on the framework's skeleton: Finalize (drop
// upstream's reservation finalizer) → Load (Slurm's view, the ssh keys,
// the revisions, the claimed pods, the DaemonSet-mode plan) → Steps (only
// once the cache shows this manager's own creates and deletes) → Status →
// the soonest requeue.

// NewObject is an empty NodeSet.
func (r *Reconciler) NewObject() *slinkyv1beta1.NodeSet { return &slinkyv1beta1.NodeSet{} }

// Forget drops what the process keeps about a NodeSet that is gone.
func (r *Reconciler) Forget(key types.NamespacedName) {
	r.expectations.Delete(key.String())
	r.metrics.ForgetNodeSet(key.Namespace, key.Name)
}

// NewScope starts one reconcile of a copy of live, which the steps change.
func (r *Reconciler) NewScope(live *slinkyv1beta1.NodeSet) *scope {
	n := live.DeepCopy()
	return &scope{Base: syncsteps.Base[*slinkyv1beta1.NodeSet]{Object: n}, key: client.ObjectKeyFromObject(n).String()}
}

// Finalize drops upstream's reservation finalizer (syncFinalizers).
func (r *Reconciler) Finalize(ctx context.Context, s *scope) (bool, error) {
	return false, r.syncFinalizers(ctx, s.Object)
}

// satisfied: every pod create and delete this manager made is in the cache,
// now and when Load listed the pods.
func (r *Reconciler) satisfied(s *scope) bool {
	return s.satisfiedAtLoad && r.expectations.Satisfied(s.key, expectationGroup)
}

// Load reads what the steps and the status share: Slurm's view of the
// nodes, the ssh keys, the revisions (adopting orphans and writing the
// current one) and the pods the NodeSet claims.
func (r *Reconciler) Load(ctx context.Context, s *scope) (err error) {
	n := s.Object
	s.slurm = r.loadSlurm(ctx, n)
	if s.ssh, err = r.loadSsh(ctx, n); err != nil {
		return err
	}
	if s.revs, err = r.listRevisions(ctx, n); err != nil {
		return err
	}
	if err := r.adoptOrphanRevisions(ctx, n, s.revs); err != nil {
		return err
	}
	if s.revisions, err = r.syncRevisions(ctx, n, s.revs, s.ssh.hashes); err != nil {
		return err
	}
	// Read before the pods are listed: expectations met after the list was
	// taken do not make that list current.
	s.satisfiedAtLoad = r.expectations.Satisfied(s.key, expectationGroup)
	pods, err := r.claimPods(ctx, s)
	if err != nil {
		return err
	}
	s.setPods(pods)
	s.daemon, err = r.loadDaemonPlan(ctx, n, s.pods)
	return err
}

// Steps converge the NodeSet's objects and pods, once the cache shows
// this manager's own pod creates and deletes, and showed them already when
// Load listed the pods (satisfied). The rollout, and the history
// truncated after it, decide from the pods as they are after scaling: they
// run only when every step before them succeeded and no create or delete
// is in flight.
func (r *Reconciler) Steps(s *scope) []syncsteps.Step[*scope] {
	if !r.satisfied(s) {
		return nil
	}
	steps := r.steps()
	for i := range steps {
		sync := steps[i].Sync
		steps[i].Sync = func(ctx context.Context, s *scope) error {
			err := sync(ctx, s)
			s.stepFailed = s.stepFailed || err != nil
			return err
		}
	}
	afterScaling := func(s *scope) bool {
		return s.stepFailed || !r.satisfied(s)
	}
	return append(steps,
		syncsteps.Step[*scope]{Name: "Rollout", Skip: afterScaling, ReportsOwnFailure: true, Sync: func(ctx context.Context, s *scope) error {
			s.rolledOut = true
			return r.syncRollout(ctx, s)
		}},
		// After the rollout whenever it ran, whatever it did.
		syncsteps.Step[*scope]{Name: "History", Skip: func(s *scope) bool { return !s.rolledOut }, ReportsOwnFailure: true,
			Sync: func(ctx context.Context, s *scope) error {
				return r.truncateHistory(ctx, s.Object, s.revs, s.revisions, s.pods)
			}},
	)
}

// Status writes the status, then reports what the pods went through
// (reportPods); a NodeSet whose Controller has a RestApi polls Slurm.
func (r *Reconciler) Status(ctx context.Context, s *scope, _ error) error {
	err := r.updateStatus(ctx, s)
	r.reportPods(s)
	if s.slurm.configured() {
		s.Requeue.After(slurmPollInterval)
	}
	return err
}

// UserError: a missing Controller, an unsupported spec or a missing sssd
// configuration is reported by the step's event; the Controller watch (or
// an edit of the NodeSet) brings the NodeSet back.
func (r *Reconciler) UserError(err error) bool { return isUserError(err) }

func (r *Reconciler) loadSlurm(ctx context.Context, n *slinkyv1beta1.NodeSet) *slurmView {
	if r.clients == nil {
		return loadSlurmView(ctx, nil, r.clock.Now())
	}
	// Only a Controller without any RestApi keeps upstream's rule that Slurm
	// state is unknowable and nodes count as drained. A RestApi whose client
	// cannot be had (its Controller or JWT key unreadable, a bad endpoint)
	// means Slurm may be running jobs on every node: fail closed and delete
	// nothing that may run jobs until it can.
	c, rest, err := r.clients.ClientFor(ctx, n.ControllerKey())
	switch {
	case err != nil && rest == "":
		return unknownSlurmView(fmt.Errorf("looking for the RestApi of Controller %s: %w", n.ControllerKey(), err))
	case err != nil:
		return unknownSlurmView(fmt.Errorf("the Slurm client of RestApi %s for Controller %s is not usable; "+
			"no pod that may run jobs is deleted until it is: %w", rest, n.ControllerKey(), err))
	case c == nil && r.hadRestApi(ctx, n):
		v := unknownSlurmView(fmt.Errorf("the Controller %s had a RestApi and has none now, so Slurm's state is unknown; "+
			"no pod that may run jobs is deleted until a RestApi answers, unless the Controller is annotated %s=true",
			n.ControllerKey(), slinkyv1beta1.AnnotationSlurmWithoutRestApi))
		v.restApiGone = true
		return v
	}
	return loadSlurmView(ctx, c, r.clock.Now())
}

// hadRestApi reports whether the NodeSet has consulted a RestApi (its
// status carries SlurmReachable, which exists only then) and its
// Controller does not say that it now runs without one on purpose. A
// Controller that cannot be read is taken as not saying so.
func (r *Reconciler) hadRestApi(ctx context.Context, n *slinkyv1beta1.NodeSet) bool {
	if meta.FindStatusCondition(n.Status.Conditions, ConditionSlurmReachable) == nil {
		return false
	}
	c := &slinkyv1beta1.Controller{}
	if err := r.Client.Get(ctx, n.ControllerKey(), c); err != nil {
		return true
	}
	optOut, _ := strconv.ParseBool(c.Annotations[slinkyv1beta1.AnnotationSlurmWithoutRestApi])
	return !optOut
}

// steps are the NodeSet's sync steps in upstream's order: shared objects,
// then Slurm-derived pod state, then the replica count.
func (r *Reconciler) steps() []syncsteps.Step[*scope] {
	return []syncsteps.Step[*scope]{
		{Name: "WorkerService", Sync: r.syncWorkerService},
		{Name: "WorkerPodDisruptionBudget", Sync: r.syncWorkerPDB},
		{Name: "SSHConfig", Sync: r.syncSshConfig},
		{Name: "SlurmDeadline", Sync: r.syncDeadlines},
		{Name: "PodProtection", Sync: r.syncProtection},
		{Name: "Cordon", Sync: r.syncCordon},
		{Name: "SlurmTopology", Sync: r.syncTopology},
		{Name: "SlurmFeatures", Sync: r.syncFeatures},
		{Name: "SlurmPodState", Sync: r.syncSlurmPodState},
		{Name: "SlurmNodes", Sync: r.syncUnregistered},
		{Name: "Replicas", Sync: r.syncReplicas},
		{Name: "SlurmNodeRecords", Sync: r.syncSlurmNodeRecords},
	}
}

// syncFinalizers drops upstream's reservation finalizer: Gantry creates no
// Slurm reservations, so a NodeSet migrated from the Slinky operator must
// not hang on deletion waiting for one to be removed.
func (r *Reconciler) syncFinalizers(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
	_, err := finalizers.Remove(ctx, r.Client, n, slinkyv1beta1.FinalizerNodeSetReservation)
	return client.IgnoreNotFound(err)
}

// errControllerMissing marks a NodeSet whose Controller does not exist yet:
// a user error, not worth a hot retry.
var errControllerMissing = errors.New("controller not found")

// errUnsupported marks a spec Gantry cannot act on yet; retrying does not help.
var errUnsupported = errors.New("not supported yet")

func isUserError(err error) bool {
	return errors.Is(err, errControllerMissing) || errors.Is(err, errUnsupported) || errors.Is(err, errSssdConfMissing)
}

// getController reads the NodeSet's Controller once per reconcile.
func (r *Reconciler) getController(ctx context.Context, s *scope) (*slinkyv1beta1.Controller, error) {
	n := s.Object
	if s.controller != nil {
		return s.controller, nil
	}
	c := &slinkyv1beta1.Controller{}
	if err := r.Client.Get(ctx, n.ControllerKey(), c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Controller %s", errControllerMissing, n.ControllerKey())
		}
		return nil, err
	}
	s.controller = c
	return c, nil
}
