package trainjob

import (
	"context"
	"fmt"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime"
)

// The run policy (Gantry's, beyond Trainer v2.3, following KEP-2899,
// kubeflow/trainer#2899): a TrainJob's activeDeadlineSeconds and
// ttlSecondsAfterFinished, each defaulting to its runtime's
// spec.runPolicy. The runtime is the one the job is built from: the
// snapshot on its JobSet (snapshot.go), so that editing a runtime does not
// change the limits of jobs already created from it (an added deadline
// would otherwise fail every long-running job at once); before the first
// build and after the JobSet is gone (deleted by the deadline, or by
// JobSet's own TTL), the runtime as it is now. Nothing is stored: the
// values are worked out again at every reconcile, so a restart loses none.

// runPolicy is the run policy in force for one TrainJob; nil means none.
type runPolicy struct {
	activeDeadlineSeconds   *int64
	ttlSecondsAfterFinished *int32
	// deadlineFromRuntime and ttlFromRuntime: the value is the runtime's
	// default, not the job's own (said in events).
	deadlineFromRuntime, ttlFromRuntime bool
}

// resolveRunPolicy takes each value from the TrainJob where it sets it
// (zero included) and from the runtime's runPolicy where it does not.
// spec may be nil: no runtime at hand.
func resolveRunPolicy(trainJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) runPolicy {
	p := runPolicy{
		activeDeadlineSeconds:   trainJob.Spec.ActiveDeadlineSeconds,
		ttlSecondsAfterFinished: trainJob.Spec.TTLSecondsAfterFinished,
	}
	if spec == nil || spec.RunPolicy == nil {
		return p
	}
	if p.activeDeadlineSeconds == nil && spec.RunPolicy.ActiveDeadlineSeconds != nil {
		p.activeDeadlineSeconds, p.deadlineFromRuntime = spec.RunPolicy.ActiveDeadlineSeconds, true
	}
	if p.ttlSecondsAfterFinished == nil && spec.RunPolicy.TTLSecondsAfterFinished != nil {
		p.ttlSecondsAfterFinished, p.ttlFromRuntime = spec.RunPolicy.TTLSecondsAfterFinished, true
	}
	return p
}

// String is for logs and test failures.
func (p runPolicy) String() string {
	var parts []string
	if p.activeDeadlineSeconds != nil {
		parts = append(parts, fmt.Sprintf("activeDeadlineSeconds=%d%s", *p.activeDeadlineSeconds, fromRuntime(p.deadlineFromRuntime)))
	}
	if p.ttlSecondsAfterFinished != nil {
		parts = append(parts, fmt.Sprintf("ttlSecondsAfterFinished=%d%s", *p.ttlSecondsAfterFinished, fromRuntime(p.ttlFromRuntime)))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func fromRuntime(b bool) string {
	if b {
		return " (runtime)"
	}
	return ""
}

// activeRunPolicy is the run policy of a job that has not finished. The
// runtime is resolved as the build resolves it (resolveRuntime, which
// keeps what it found for the build), and only when the job leaves the
// deadline to it. A runtime that cannot be resolved gives no default; the
// build step reports why.
func (r *Reconciler) activeRunPolicy(ctx context.Context, s *scope) runPolicy {
	if s.Object.Spec.ActiveDeadlineSeconds != nil {
		return resolveRunPolicy(s.Object, nil)
	}
	if err := r.resolveRuntime(ctx, s); err != nil {
		return resolveRunPolicy(s.Object, nil)
	}
	return resolveRunPolicy(s.Object, s.spec)
}

// finishedRunPolicy is the run policy of a finished job, which is never
// built again: the runtime is read from its JobSet's snapshot, or else
// from the cache, and only when the job leaves the TTL to it. A JobSet
// without the snapshot annotation may have its snapshot in the job's
// ConfigMap (a runtime too big for the annotation), which is read from the
// cache too. Trainer's snapshot ConfigMap, which is not cached, is not read
// (that is a read past the cache for every finished job after a restart,
// and Trainer v2.3's runtimes have no runPolicy anyway).
func (r *Reconciler) finishedRunPolicy(ctx context.Context, trainJob *trainer.TrainJob, jobSet *jobsetv1alpha2.JobSet) runPolicy {
	if trainJob.Spec.TTLSecondsAfterFinished != nil {
		return resolveRunPolicy(trainJob, nil)
	}
	spec, err := readRuntimeSnapshot(jobSet)
	if err == nil && spec == nil && jobSet != nil {
		spec, err = readTrainerSnapshot(ctx, r.client, trainJob)
	}
	if err != nil || spec == nil {
		spec, err = runtime.ResolveSpec(ctx, r.client, trainJob)
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).V(2).Info("no runtime to take ttlSecondsAfterFinished from", "error", err.Error())
		return resolveRunPolicy(trainJob, nil)
	}
	return resolveRunPolicy(trainJob, spec)
}
