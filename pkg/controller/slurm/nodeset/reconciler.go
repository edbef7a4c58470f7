// Package nodeset reconciles Slinky NodeSets: the slurmd worker pods of a
// Slurm cluster, kept in step with what Slurm knows about their nodes.
//
// A pod is only deleted once its Slurm node is drained and idle, so scale-in
// and rolling updates never kill a job; cordoning a Kubernetes Node drains
// the Slurm nodes of the pods on it. Slurm is read once per reconcile (one
// node list, one job list) and every step consults that snapshot.
package nodeset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
	"github.com/gantry-dev/gantry/pkg/framework/expectations"
	"github.com/gantry-dev/gantry/pkg/framework/requeue"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-nodeset"

// FieldOwner owns the fields Gantry writes on Slurm objects.
const FieldOwner = "gantry-slurm"

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

// Reconciler reconciles one NodeSet per call.
type Reconciler struct {
	client client.Client
	// apiReader bypasses the cache for the few reads that must be fresh
	// (the NodeSet before adopting pods, a colliding revision).
	apiReader    client.Reader
	recorder     events.EventRecorder
	clients      ClientSource
	expectations *expectations.Expectations
	// backoff delays the replacement of failed pods.
	backoff *failedPodBackoff
	// Images fill in container images the NodeSet leaves empty.
	Images common.Images
	// Now is the clock; tests replace it.
	Now func() time.Time
}

// NewReconciler returns a reconciler writing through c, reading fresh
// objects through apiReader, taking Slurm clients from clients (nil: no
// Controller has a RestApi) and recording events with recorder (nil
// records none).
func NewReconciler(c client.Client, apiReader client.Reader, clients ClientSource, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{
		client:       client.WithFieldOwner(c, FieldOwner),
		apiReader:    apiReader,
		recorder:     recorder,
		clients:      clients,
		expectations: expectations.New(),
		backoff:      newFailedPodBackoff(FailedPodBackoffInitial, FailedPodBackoffMax),
		Images:       common.DefaultImages(),
		Now:          time.Now,
	}
}

// syncRun is what the steps of one reconcile share.
type syncRun struct {
	key        string
	controller *slinkyv1beta1.Controller
	slurm      *slurmView
	revisions  revisionState
	changes    common.ChangeLog
	requeue    requeue.Requeue
	tally      tally
	// daemon is the DaemonSet-mode plan; nil in StatefulSet mode.
	daemon *daemonPlan
	ssh    sshState
}

// Reconcile converges the pods of the NodeSet named by req.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.String()
	live := &slinkyv1beta1.NodeSet{}
	if err := r.client.Get(ctx, req.NamespacedName, live); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.Delete(key)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	n := live.DeepCopy()
	if err := r.syncFinalizers(ctx, n); err != nil {
		return reconcile.Result{}, err
	}

	run := &syncRun{key: key, slurm: r.loadSlurm(ctx, n)}
	var err error
	if run.ssh, err = r.loadSsh(ctx, n); err != nil {
		return reconcile.Result{}, err
	}
	revs, err := r.listRevisions(ctx, n)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.adoptOrphanRevisions(ctx, n, revs); err != nil {
		return reconcile.Result{}, err
	}
	if run.revisions, err = r.syncRevisions(ctx, n, revs, run.ssh.hashes); err != nil {
		return reconcile.Result{}, err
	}
	pods, err := r.claimPods(ctx, n)
	if err != nil {
		return reconcile.Result{}, err
	}
	if run.daemon, err = r.loadDaemonPlan(ctx, n, pods); err != nil {
		return reconcile.Result{}, err
	}

	var syncErr error
	if r.expectations.Satisfied(key, expectationGroup) && n.DeletionTimestamp == nil {
		syncErr = syncsteps.Run(ctx, r.recorder, n, r.steps(run, pods))
		// A rollout decides from the pods as they are after scaling; with
		// creates or deletes in flight it waits for the informer to catch up.
		if syncErr == nil && r.expectations.Satisfied(key, expectationGroup) {
			syncErr = errors.Join(r.syncRollout(ctx, n, run, pods), r.truncateHistory(ctx, n, revs, run.revisions, pods))
		}
	}
	run.changes.Record(r.recorder, n)
	run.tally.record(r.recorder, n)

	statusErr := r.updateStatus(ctx, n, run, pods)
	if run.slurm.configured() {
		run.requeue.After(slurmPollInterval)
	}
	if isUserError(syncErr) {
		// Reported by the step's event; the Controller watch (or an edit
		// of the NodeSet) brings the NodeSet back.
		log.FromContext(ctx).V(1).Info("not retrying a user error", "reason", syncErr.Error())
		syncErr = nil
	}
	return run.requeue.Result(), errors.Join(syncErr, statusErr)
}

func (r *Reconciler) loadSlurm(ctx context.Context, n *slinkyv1beta1.NodeSet) *slurmView {
	if r.clients == nil {
		return loadSlurmView(ctx, nil, r.Now())
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
	}
	return loadSlurmView(ctx, c, r.Now())
}

// steps are the NodeSet's sync steps in upstream's order: shared objects,
// then Slurm-derived pod state, then the replica count.
func (r *Reconciler) steps(run *syncRun, pods []*corev1.Pod) []syncsteps.Step[*slinkyv1beta1.NodeSet] {
	return []syncsteps.Step[*slinkyv1beta1.NodeSet]{
		{Name: "WorkerService", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncWorkerService(ctx, n, run)
		}},
		{Name: "WorkerPodDisruptionBudget", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncWorkerPDB(ctx, n, run)
		}},
		{Name: "SshConfig", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncSshConfig(ctx, n, run)
		}},
		{Name: "SlurmDeadline", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncDeadlines(ctx, run, pods)
		}},
		{Name: "PodProtection", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncProtection(ctx, n, run, pods)
		}},
		{Name: "Cordon", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncCordon(ctx, run, pods)
		}},
		{Name: "SlurmTopology", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncTopology(ctx, run, pods)
		}},
		{Name: "SlurmPodState", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncSlurmPodState(ctx, n, run, pods)
		}},
		{Name: "SlurmNodes", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncUnregistered(ctx, n, run, pods)
		}},
		{Name: "Replicas", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncReplicas(ctx, n, run, pods)
		}},
		{Name: "SlurmNodeRecords", Sync: func(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
			return r.syncSlurmNodeRecords(ctx, n, run)
		}},
	}
}

// syncFinalizers drops upstream's reservation finalizer: Gantry creates no
// Slurm reservations, so a NodeSet migrated from the Slinky operator must
// not hang on deletion waiting for one to be removed.
func (r *Reconciler) syncFinalizers(ctx context.Context, n *slinkyv1beta1.NodeSet) error {
	if !slices.Contains(n.Finalizers, slinkyv1beta1.FinalizerNodeSetReservation) {
		return nil
	}
	patch := client.MergeFromWithOptions(n.DeepCopy(), client.MergeFromWithOptimisticLock{})
	n.Finalizers = slices.DeleteFunc(slices.Clone(n.Finalizers), func(f string) bool {
		return f == slinkyv1beta1.FinalizerNodeSetReservation
	})
	return client.IgnoreNotFound(r.client.Patch(ctx, n, patch))
}

// claimPods returns the pods the NodeSet controls after adopting orphans
// that match its selector and name scheme and releasing pods it controls
// that no longer match.
func (r *Reconciler) claimPods(ctx context.Context, n *slinkyv1beta1.NodeSet) ([]*corev1.Pod, error) {
	owned := &corev1.PodList{}
	if err := r.client.List(ctx, owned, client.InNamespace(n.Namespace), client.MatchingFields{IndexPodOwner: string(n.UID)}); err != nil {
		return nil, err
	}
	candidates := &corev1.PodList{}
	selector := common.NodeSetSelectorLabels(n)
	if err := r.client.List(ctx, candidates, client.InNamespace(n.Namespace), client.MatchingLabels(selector)); err != nil {
		return nil, err
	}
	var pods, orphans []*corev1.Pod
	for i := range owned.Items {
		p := &owned.Items[i]
		if matchesSelector(p, selector) {
			pods = append(pods, p)
			continue
		}
		if err := r.releasePod(ctx, n, p); err != nil {
			return nil, err
		}
	}
	for i := range candidates.Items {
		p := &candidates.Items[i]
		if metav1.GetControllerOf(p) == nil && p.DeletionTimestamp == nil && namedAsPodOf(n, p) {
			orphans = append(orphans, p)
		}
	}
	if len(orphans) == 0 || n.DeletionTimestamp != nil {
		return pods, nil
	}
	// Adopting on a stale view of a NodeSet that is being deleted would
	// hand pods to an owner about to vanish.
	fresh := &slinkyv1beta1.NodeSet{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(n), fresh); err != nil {
		return nil, err
	}
	if fresh.UID != n.UID || fresh.DeletionTimestamp != nil {
		return pods, nil
	}
	for _, p := range orphans {
		patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
		p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK))
		if err := r.client.Patch(ctx, p, patch); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("adopting Pod %s: %w", p.Name, err)
		}
		pods = append(pods, p)
	}
	r.recordf(n, corev1.EventTypeNormal, "Adopted", "Adopted %d orphan Pod(s): %s", len(orphans), podNames(orphans))
	return pods, nil
}

// namedAsPodOf reports a pod named the way the NodeSet names its pods in
// its scaling mode: <nodeset>-<ordinal>, or in DaemonSet mode generated
// from <nodeset>-, as Slinky tells its orphans apart.
func namedAsPodOf(n *slinkyv1beta1.NodeSet, p *corev1.Pod) bool {
	if isDaemonSetMode(n) {
		return p.GenerateName == n.Name+"-"
	}
	parent, ordinal := parentAndOrdinal(p.Name)
	return parent == n.Name && ordinal >= 0
}

func (r *Reconciler) releasePod(ctx context.Context, n *slinkyv1beta1.NodeSet, p *corev1.Pod) error {
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	p.OwnerReferences = slices.DeleteFunc(slices.Clone(p.OwnerReferences), func(ref metav1.OwnerReference) bool {
		return ref.UID == n.UID
	})
	if err := r.client.Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("releasing Pod %s: %w", p.Name, err)
	}
	return nil
}

func matchesSelector(p *corev1.Pod, selector map[string]string) bool {
	for k, v := range selector {
		if p.Labels[k] != v {
			return false
		}
	}
	return true
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
func (r *Reconciler) getController(ctx context.Context, n *slinkyv1beta1.NodeSet, run *syncRun) (*slinkyv1beta1.Controller, error) {
	if run.controller != nil {
		return run.controller, nil
	}
	c := &slinkyv1beta1.Controller{}
	if err := r.client.Get(ctx, n.ControllerKey(), c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Controller %s", errControllerMissing, n.ControllerKey())
		}
		return nil, err
	}
	run.controller = c
	return c, nil
}

func (r *Reconciler) recordf(n *slinkyv1beta1.NodeSet, eventType, reason, format string, args ...any) {
	if r.recorder != nil {
		r.recorder.Eventf(n, nil, eventType, reason, common.ActionSync, format, args...)
	}
}
