package trainjob

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	skeleton "github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// JobSetNotInstalledReason is the Warning event a TrainJob gets while the
// cluster has no JobSet CRD and the TrainJob controller therefore waits.
const JobSetNotInstalledReason = "JobSetNotInstalled"

// jobSetMissingMessage tells a user what to install; it is the same in the
// log and in the events.
var jobSetMissingMessage = fmt.Sprintf("JobSet (%s) is not installed in this cluster, so TrainJobs wait: "+
	"install JobSet (the Gantry chart does it with --set jobset.install=true) and the trainjob controller "+
	"starts by itself; Ray and Slurm workloads are not affected", jobsetv1alpha2.SchemeGroupVersion)

// jobSetCRDPollInterval is how often discovery is asked whether JobSet's
// CRD is served yet; a few requests a minute cost the API server nothing.
const jobSetCRDPollInterval = 5 * time.Second

// jobSetServed reports whether the API server serves JobSets.
func jobSetServed(d discovery.DiscoveryInterface) (bool, error) {
	gv := jobsetv1alpha2.SchemeGroupVersion
	list, err := d.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Kind == "JobSet" {
			return true, nil
		}
	}
	return false, nil
}

// jobSetWaiter starts the TrainJob controller once JobSet's CRD is served,
// so a default install without JobSet keeps the rest of the manager
// running instead of exiting. Until then, every TrainJob that is created
// or changed gets a Warning event saying what to install.
type jobSetWaiter struct {
	discovery discovery.DiscoveryInterface
	interval  time.Duration
	// startController wires the real TrainJob controller into the
	// (already running) manager.
	startController func() error
	started         atomic.Bool
}

// NeedLeaderElection: only the leader starts controllers and emits events.
func (w *jobSetWaiter) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable.
func (w *jobSetWaiter) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("trainjob")
	log.Info("waiting for JobSet's CRD before starting the trainjob controller", "reason", jobSetMissingMessage)
	lastLog := time.Now()
	err := wait.PollUntilContextCancel(ctx, w.interval, true, func(context.Context) (bool, error) {
		served, err := jobSetServed(w.discovery)
		if err != nil {
			log.V(1).Info("asking discovery for JobSet failed; retrying", "error", err.Error())
			return false, nil
		}
		if !served && time.Since(lastLog) > time.Minute {
			log.Info("still waiting for JobSet's CRD", "reason", jobSetMissingMessage)
			lastLog = time.Now()
		}
		return served, nil
	})
	if err != nil {
		// The manager is stopping.
		return nil
	}
	if err := w.startController(); err != nil {
		return fmt.Errorf("starting the trainjob controller after JobSet's CRD appeared: %w", err)
	}
	w.started.Store(true)
	log.Info("JobSet's CRD is installed; the trainjob controller started")
	return nil
}

// jobSetMissingNotifier is the small controller that runs while the waiter
// waits, on the reconcile skeleton: it tells the owner of each TrainJob why
// nothing happens.
type jobSetMissingNotifier struct {
	skeleton.Skeleton[*trainer.TrainJob, *notifierScope]
	recorder events.Recorder
	waiter   *jobSetWaiter
}

// notifierScope is what one notice knows: the TrainJob.
type notifierScope struct {
	syncsteps.Base[*trainer.TrainJob]
}

func newJobSetMissingNotifier(c client.Client, recorder events.Recorder, w *jobSetWaiter) *jobSetMissingNotifier {
	n := &jobSetMissingNotifier{recorder: recorder, waiter: w}
	n.Skeleton = skeleton.New(c, recorder, skeleton.Workload[*trainer.TrainJob, *notifierScope](n), skeleton.Options{})
	return n
}

func (n *jobSetMissingNotifier) NewObject() *trainer.TrainJob { return &trainer.TrainJob{} }

func (n *jobSetMissingNotifier) NewScope(tj *trainer.TrainJob) *notifierScope {
	return &notifierScope{Base: syncsteps.Base[*trainer.TrainJob]{Object: tj}}
}

// Skip: once the controller runs, and for a finished job, there is
// nothing to say.
func (n *jobSetMissingNotifier) Skip(_ context.Context, tj *trainer.TrainJob) bool {
	return n.waiter.started.Load() || trainer.IsFinished(tj.Status.Conditions)
}

func (n *jobSetMissingNotifier) Steps(*notifierScope) []syncsteps.Step[*notifierScope] {
	return []syncsteps.Step[*notifierScope]{{Name: "JobSetMissing", Sync: func(_ context.Context, s *notifierScope) error {
		n.recorder.Warning(s.Object, JobSetNotInstalledReason, "%s", jobSetMissingMessage)
		return nil
	}}}
}

// Status writes nothing: the controller that starts once JobSet is
// installed writes the job's status.
func (n *jobSetMissingNotifier) Status(context.Context, *notifierScope, error) error { return nil }

// setupWhenJobSetServed starts the controller now when JobSet's CRD is
// served, and otherwise registers the waiter and the notifier.
func setupWhenJobSetServed(mgr ctrl.Manager, d discovery.DiscoveryInterface, interval time.Duration, start func() error) error {
	served, err := jobSetServed(d)
	if err == nil && served {
		return start()
	}
	w := &jobSetWaiter{discovery: d, interval: interval, startController: start}
	n := newJobSetMissingNotifier(mgr.GetClient(), events.NewRecorder(mgr.GetEventRecorder(ControllerName)), w)
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("trainjob-awaiting-jobset").
		For(&trainer.TrainJob{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(n); err != nil {
		return err
	}
	return mgr.Add(w)
}
