package rayjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/submitter"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// advance runs the handler of the state the RayJob is in. A handler
// changes the status in s.Object (written once, by Status) or sets s.hold
// when there is nothing to write, as KubeRay's state machine does
// (rayjob_controller.go, v1.7.0):
//
//	New → Initializing (names chosen, clock started)
//	Initializing → Running (cluster ready, submitted; in SidecarMode also
//	               a submitter that ended before the head was Ready, Gantry's)
//	             | Waiting (InteractiveMode)
//	Waiting → Running (spec.jobId set)
//	Running → Complete | Failed (the Ray job and its submitter ended)
//	Initializing | Running → Suspending → Suspended → New (spec.suspend)
//	Failed → Retrying → New (backoffLimit; a new cluster)
//	any but the ends → Failed (deadlines, grace periods, timeouts)
func (r *Reconciler) advance(ctx context.Context, s *scope) error {
	job := s.Object
	switch job.Status.JobDeploymentStatus {
	case rayv1.JobDeploymentStatusNew:
		s.Requeue.After(DefaultRequeue)
		r.initStatus(s)
		return nil
	case rayv1.JobDeploymentStatusInitializing:
		s.Requeue.After(DefaultRequeue)
		return r.initializing(ctx, s)
	case rayv1.JobDeploymentStatusWaiting:
		s.Requeue.After(DefaultRequeue)
		r.waiting(s)
		return nil
	case rayv1.JobDeploymentStatusRunning:
		s.Requeue.After(DefaultRequeue)
		return r.running(ctx, s)
	case rayv1.JobDeploymentStatusSuspending, rayv1.JobDeploymentStatusRetrying:
		s.Requeue.After(DefaultRequeue)
		return r.release(ctx, s)
	case rayv1.JobDeploymentStatusSuspended:
		if job.Spec.Suspend {
			s.hold = true
			return nil
		}
		job.Status.JobStatus = rayv1.JobStatusNew
		job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusNew
		s.Requeue.After(DefaultRequeue)
		return nil
	case rayv1.JobDeploymentStatusComplete, rayv1.JobDeploymentStatusFailed:
		s.hold = true
		return r.finished(ctx, s)
	default:
		// ValidationFailed, or a state this version does not know: a fixed
		// spec does not restart a RayJob (as KubeRay); it is recreated.
		s.hold = true
		return nil
	}
}

// initStatus chooses the Ray job's submission ID and the cluster's name
// before anything is created with them, so that a retried reconcile
// submits and creates nothing twice; and starts the deadlines' clock.
func (r *Reconciler) initStatus(s *scope) {
	job := s.Object
	if job.Status.JobId != "" && job.Status.RayClusterName != "" && job.Status.JobStatus != "" {
		return
	}
	if mode(job) != rayv1.InteractiveMode && job.Status.JobId == "" {
		job.Status.JobId = job.Spec.JobId
		if job.Status.JobId == "" {
			job.Status.JobId = submitter.JobID(job.Name)
		}
	}
	if job.Status.RayClusterName == "" {
		job.Status.RayClusterName = job.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey]
		if job.Status.RayClusterName == "" {
			job.Status.RayClusterName = submitter.ClusterName(job.Name)
		}
	}
	job.Status.JobStatus = rayv1.JobStatusNew
	job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusInitializing
	job.Status.StartTime = &metav1.Time{Time: s.now}
}

// initializing creates the cluster, waits for it to be ready and submits
// the job (K8sJobMode) or waits for the user (InteractiveMode). In
// SidecarMode a submitter container that ended before the head Pod was
// Ready ends the wait (see sidecarEndedFirst).
func (r *Reconciler) initializing(ctx context.Context, s *scope) error {
	job := s.Object
	if toSuspending(job) || r.activeDeadlineExceeded(s) || preRunningDeadlineExceeded(s) {
		return nil
	}
	cluster, err := r.clusterFor(ctx, s)
	if err != nil {
		return err
	}
	if job.Status.DashboardURL == "" {
		if cluster.Status.State != rayv1.Ready {
			ended, err := r.sidecarEndedFirst(ctx, s, cluster)
			if err != nil {
				return err
			}
			if !ended {
				job.Status.RayClusterStatus = cluster.Status
				return nil
			}
		}
		address, err := r.dashboardAddressOf(ctx, cluster)
		if err != nil {
			return err
		}
		job.Status.DashboardURL = address
	}
	switch mode(job) {
	case rayv1.InteractiveMode:
		job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusWaiting
		return nil
	case rayv1.K8sJobMode:
		if err := r.ensureSubmitter(ctx, s, cluster); err != nil {
			return err
		}
	}
	job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusRunning
	return nil
}

// waiting is InteractiveMode's: the user submits, then names the job.
func (r *Reconciler) waiting(s *scope) {
	job := s.Object
	if preRunningDeadlineExceeded(s) {
		return
	}
	if job.Spec.JobId == "" {
		s.hold = true
		return
	}
	job.Status.JobId = job.Spec.JobId
	job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusRunning
}

// running follows the Ray job (and its submitter) to the end.
func (r *Reconciler) running(ctx context.Context, s *scope) error {
	job := s.Object
	if toSuspending(job) || r.activeDeadlineExceeded(s) || r.gracePeriodExceeded(s) || r.statusCheckTimedOut(s) {
		return nil
	}
	cluster, err := r.clusterFor(ctx, s)
	if err != nil {
		return err
	}
	if err := r.ensureHeadService(ctx, s, cluster); err != nil {
		return err
	}
	var finishedAt *time.Time
	if hasSubmitter(job) {
		var failed bool
		failed, finishedAt, err = r.checkSubmitter(ctx, s, cluster)
		if err != nil {
			return err
		}
		if r.submitterFinishedTimedOut(s, finishedAt) || failed {
			return nil
		}
	}
	dash, err := r.dashboards.For(ctx, cluster, job.Status.DashboardURL)
	if err != nil {
		return err
	}
	info, err := dash.JobInfo(ctx, job.Status.JobId)
	if err != nil {
		r.jobInfoFailed(ctx, s, dash, err, finishedAt)
		return nil
	}
	job.Status.JobStatusCheckFailureStartTime = nil
	status := rayv1.JobStatus(info.Status)
	ended := rayv1.IsJobTerminal(status)
	if hasSubmitter(job) {
		// The submitter relays the job's logs: the RayJob ends when both
		// have ended (KubeRay #1919).
		ended = ended && finishedAt != nil
	}
	deployment, reason := rayv1.JobDeploymentStatusRunning, rayv1.JobFailedReason("")
	if ended {
		deployment = rayv1.JobDeploymentStatusComplete
		if status == rayv1.JobStatusFailed {
			deployment, reason = rayv1.JobDeploymentStatusFailed, rayv1.AppFailed
		}
	}
	job.Status.RayClusterStatus = cluster.Status
	job.Status.JobStatus = status
	job.Status.JobDeploymentStatus = deployment
	job.Status.Reason = reason
	job.Status.Message = info.Message
	if info.StartTime != 0 {
		job.Status.RayJobStatusInfo.StartTime = &metav1.Time{Time: millis(info.StartTime)}
	}
	if info.EndTime != nil && *info.EndTime != 0 {
		job.Status.RayJobStatusInfo.EndTime = &metav1.Time{Time: millis(*info.EndTime)}
	}
	return nil
}

// jobInfoFailed handles a dashboard that could not tell the job's status:
// in HTTPMode a job it does not know is submitted; a submitter that ended
// without the job ever reaching the dashboard fails the RayJob; any other
// failure starts (or continues) the status-check timeout.
func (r *Reconciler) jobInfoFailed(ctx context.Context, s *scope, dash *dashboard.Client, err error, finishedAt *time.Time) {
	job := s.Object
	if dashboard.IsNotFound(err) {
		switch {
		case mode(job) == rayv1.HTTPMode:
			req, rerr := JobRequest(job)
			if rerr == nil {
				_, rerr = dash.SubmitJob(ctx, req)
				if errors.Is(rerr, dashboard.ErrSubmissionIDInUse) {
					rerr = nil
				}
			}
			if rerr != nil {
				r.statusCheckFailed(s, rerr)
				return
			}
			if job.Status.JobStatusCheckFailureStartTime == nil {
				s.hold = true
			}
			job.Status.JobStatusCheckFailureStartTime = nil
		case finishedAt != nil:
			job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusFailed
			job.Status.Reason = rayv1.AppFailed
			job.Status.Message = "Submitter completed but Ray job not found in RayCluster."
		default:
			s.hold = true
		}
		return
	}
	r.statusCheckFailed(s, err)
}

// ReasonJobStatusCheckFailed is Gantry's event (KubeRay only logs it) for a
// dashboard that could not tell the Ray job's status.
const ReasonJobStatusCheckFailed = "JobStatusCheckFailed"

// statusCheckFailed records when the dashboard began failing; only that
// first time is written.
func (r *Reconciler) statusCheckFailed(s *scope, err error) {
	job := s.Object
	if job.Status.JobStatusCheckFailureStartTime != nil {
		s.hold = true
		return
	}
	job.Status.JobStatusCheckFailureStartTime = &metav1.Time{Time: s.now}
	r.recorder.Warning(job, ReasonJobStatusCheckFailed, "The Ray job's status could not be read (the RayJob fails if this lasts %v): %v", r.cfg.StatusCheckTimeout, err)
}

// release deletes the cluster and the submitter of a RayJob being
// suspended or retried; only once both are gone does the status move on,
// so that no compute is left running behind a Suspended RayJob.
func (r *Reconciler) release(ctx context.Context, s *scope) error {
	job := s.Object
	clusterGone, err := r.deleteCluster(ctx, s)
	if err != nil {
		return err
	}
	submitterGone, err := r.deleteSubmitter(ctx, s)
	if err != nil {
		return err
	}
	if !clusterGone || !submitterGone {
		s.hold = true
		return nil
	}
	job.Status.RayClusterStatus = rayv1.RayClusterStatus{}
	job.Status.RayClusterName = ""
	job.Status.DashboardURL = ""
	job.Status.JobId = ""
	job.Status.Message = ""
	job.Status.Reason = ""
	job.Status.RayJobStatusInfo = rayv1.RayJobStatusInfo{}
	job.Status.JobStatusCheckFailureStartTime = nil
	job.Status.JobStatus = rayv1.JobStatusNew
	if job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusSuspending {
		job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusSuspended
	} else {
		job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusNew
	}
	return nil
}

// toSuspending moves a suspended Initializing or Running RayJob to
// Suspending.
func toSuspending(job *rayv1.RayJob) bool {
	if !job.Spec.Suspend {
		return false
	}
	switch job.Status.JobDeploymentStatus {
	case rayv1.JobDeploymentStatusInitializing, rayv1.JobDeploymentStatusRunning:
		job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusSuspending
		return true
	}
	return false
}

func (r *Reconciler) activeDeadlineExceeded(s *scope) bool {
	return deadlinePassed(s, s.Object.Spec.ActiveDeadlineSeconds, rayv1.DeadlineExceeded, "activeDeadlineSeconds", "ActiveDeadlineSeconds")
}

func preRunningDeadlineExceeded(s *scope) bool {
	return deadlinePassed(s, s.Object.Spec.PreRunningDeadlineSeconds, rayv1.PreRunningDeadlineExceeded, "preRunningDeadlineSeconds", "PreRunningDeadlineSeconds")
}

// deadlinePassed fails the RayJob, with KubeRay's message, once seconds
// have passed since it started; before that it asks to be back then.
func deadlinePassed(s *scope, seconds *int32, reason rayv1.JobFailedReason, field, label string) bool {
	job := s.Object
	if seconds == nil || job.Status.StartTime == nil {
		return false
	}
	deadline := job.Status.StartTime.Add(time.Duration(*seconds) * time.Second)
	if s.now.Before(deadline) {
		s.Requeue.After(deadline.Sub(s.now))
		return false
	}
	fail(job, reason, fmt.Sprintf("The RayJob has passed the %s. StartTime: %v. %s: %d", field, job.Status.StartTime, label, *seconds))
	return true
}

// gracePeriodExceeded ends a RayJob whose Ray job ended long ago while its
// submitter is still running (a `ray job logs --follow` that never
// returns).
func (r *Reconciler) gracePeriodExceeded(s *scope) bool {
	job := s.Object
	end := job.Status.RayJobStatusInfo.EndTime
	if !rayv1.IsJobTerminal(job.Status.JobStatus) || end == nil || s.now.Before(end.Add(max(r.cfg.TransitionGracePeriod, 0))) {
		return false
	}
	job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusComplete
	if job.Status.JobStatus == rayv1.JobStatusFailed {
		job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusFailed
	}
	job.Status.Reason = rayv1.JobDeploymentStatusTransitionGracePeriodExceeded
	job.Status.Message = "JobDeploymentStatus does not transition to Complete or Failed within the grace period after JobStatus reaches a terminal state."
	return true
}

// statusCheckTimedOut fails a RayJob whose dashboard has not told its
// status for StatusCheckTimeout.
func (r *Reconciler) statusCheckTimedOut(s *scope) bool {
	job := s.Object
	since := job.Status.JobStatusCheckFailureStartTime
	if since == nil || s.now.Before(since.Add(r.cfg.StatusCheckTimeout)) {
		return false
	}
	fail(job, rayv1.JobStatusCheckTimeoutExceeded, fmt.Sprintf("Job status checks have been failing since %v; exceeded timeout of %ds",
		since.Format(time.DateTime), int(r.cfg.StatusCheckTimeout.Seconds())))
	return true
}

// submitterFinishedTimedOut fails a RayJob whose submitter finished
// SubmitterFinishedTimeout ago while the Ray job has not ended.
func (r *Reconciler) submitterFinishedTimedOut(s *scope, finishedAt *time.Time) bool {
	if finishedAt == nil {
		return false
	}
	if deadline := finishedAt.Add(r.cfg.SubmitterFinishedTimeout); s.now.Before(deadline) {
		s.Requeue.After(deadline.Sub(s.now))
		return false
	}
	job := s.Object
	job.Status.JobStatus = rayv1.JobStatusFailed
	fail(job, rayv1.JobDeploymentStatusTransitionGracePeriodExceeded, fmt.Sprintf("The RayJob submitter finished at %v but the ray job did not reach terminal state within %v",
		finishedAt.Format(time.DateTime), r.cfg.SubmitterFinishedTimeout))
	return true
}

func fail(job *rayv1.RayJob, reason rayv1.JobFailedReason, message string) {
	job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusFailed
	job.Status.Reason = reason
	job.Status.Message = message
}

// millis is a time the dashboard reports in milliseconds since the epoch.
func millis(ms uint64) time.Time {
	if ms > 1<<62 {
		ms = 1 << 62
	}
	return time.UnixMilli(int64(ms))
}
