package rayjob

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// countAttempt is KubeRay's checkBackoffLimitAndUpdateStatusIfNeeded: a
// failure is retried while failed <= backoffLimit, except after a deadline
// or a dashboard that never answered.
func TestCountAttempt(t *testing.T) {
	tests := []struct {
		name               string
		limit              *int32
		failedBefore       int32
		deployment         rayv1.JobDeploymentStatus
		jobStatus          rayv1.JobStatus
		reason             rayv1.JobFailedReason
		want               rayv1.JobDeploymentStatus
		wantFailed, wantOK int32
	}{
		{"running counts nothing", ptr.To[int32](2), 0, rayv1.JobDeploymentStatusRunning, rayv1.JobStatusRunning, "", rayv1.JobDeploymentStatusRunning, 0, 0},
		{"success counted", ptr.To[int32](2), 0, rayv1.JobDeploymentStatusComplete, rayv1.JobStatusSucceeded, "", rayv1.JobDeploymentStatusComplete, 0, 1},
		{"stopped is complete, not a success", nil, 0, rayv1.JobDeploymentStatusComplete, rayv1.JobStatusStopped, "", rayv1.JobDeploymentStatusComplete, 0, 0},
		{"no limit: failed stays", nil, 0, rayv1.JobDeploymentStatusFailed, rayv1.JobStatusFailed, rayv1.AppFailed, rayv1.JobDeploymentStatusFailed, 1, 0},
		{"limit 0: failed stays", ptr.To[int32](0), 0, rayv1.JobDeploymentStatusFailed, rayv1.JobStatusFailed, rayv1.AppFailed, rayv1.JobDeploymentStatusFailed, 1, 0},
		{"first failure of 1 retried", ptr.To[int32](1), 0, rayv1.JobDeploymentStatusFailed, rayv1.JobStatusFailed, rayv1.AppFailed, rayv1.JobDeploymentStatusRetrying, 1, 0},
		{"second failure of 1 is the end", ptr.To[int32](1), 1, rayv1.JobDeploymentStatusFailed, rayv1.JobStatusFailed, rayv1.AppFailed, rayv1.JobDeploymentStatusFailed, 2, 0},
		{"submission failure retried", ptr.To[int32](3), 1, rayv1.JobDeploymentStatusFailed, "", rayv1.SubmissionFailed, rayv1.JobDeploymentStatusRetrying, 2, 0},
		{"deadline never retried", ptr.To[int32](3), 0, rayv1.JobDeploymentStatusFailed, "", rayv1.DeadlineExceeded, rayv1.JobDeploymentStatusFailed, 1, 0},
		{"dashboard timeout never retried", ptr.To[int32](3), 0, rayv1.JobDeploymentStatusFailed, "", rayv1.JobStatusCheckTimeoutExceeded, rayv1.JobDeploymentStatusFailed, 1, 0},
		{"pre-running deadline retried", ptr.To[int32](3), 0, rayv1.JobDeploymentStatusFailed, "", rayv1.PreRunningDeadlineExceeded, rayv1.JobDeploymentStatusRetrying, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &rayv1.RayJob{Spec: rayv1.RayJobSpec{BackoffLimit: tt.limit}, Status: rayv1.RayJobStatus{
				JobDeploymentStatus: tt.deployment, JobStatus: tt.jobStatus, Reason: tt.reason, Failed: ptr.To(tt.failedBefore)}}
			countAttempt(job)
			if got := job.Status.JobDeploymentStatus; got != tt.want {
				t.Errorf("deployment status %q, want %q", got, tt.want)
			}
			if *job.Status.Failed != tt.wantFailed || *job.Status.Succeeded != tt.wantOK {
				t.Errorf("failed %d succeeded %d, want %d and %d", *job.Status.Failed, *job.Status.Succeeded, tt.wantFailed, tt.wantOK)
			}
		})
	}
}

// The status is written only for a change the state machine keys on:
// not for the cluster's lastUpdateTime, nor a message alone.
func TestStatusChanged(t *testing.T) {
	base := rayv1.RayJobStatus{JobStatus: rayv1.JobStatusRunning, JobDeploymentStatus: rayv1.JobDeploymentStatusRunning,
		RayClusterStatus: rayv1.RayClusterStatus{State: rayv1.Ready, ReadyWorkerReplicas: 1}}
	now := metav1.NewTime(time.Unix(1000, 0))
	for name, tt := range map[string]struct {
		edit func(*rayv1.RayJobStatus)
		want bool
	}{
		"nothing":                 {func(*rayv1.RayJobStatus) {}, false},
		"message only":            {func(s *rayv1.RayJobStatus) { s.Message = "x" }, false},
		"cluster lastUpdateTime":  {func(s *rayv1.RayJobStatus) { s.RayClusterStatus.LastUpdateTime = &now }, false},
		"job status":              {func(s *rayv1.RayJobStatus) { s.JobStatus = rayv1.JobStatusSucceeded }, true},
		"deployment status":       {func(s *rayv1.RayJobStatus) { s.JobDeploymentStatus = rayv1.JobDeploymentStatusComplete }, true},
		"cluster ready workers":   {func(s *rayv1.RayJobStatus) { s.RayClusterStatus.ReadyWorkerReplicas = 2 }, true},
		"cluster state":           {func(s *rayv1.RayJobStatus) { s.RayClusterStatus.State = rayv1.Suspended }, true},
		"status check failure on": {func(s *rayv1.RayJobStatus) { s.JobStatusCheckFailureStartTime = &now }, true},
	} {
		updated := *base.DeepCopy()
		tt.edit(&updated)
		if got := statusChanged(&base, &updated); got != tt.want {
			t.Errorf("%s: changed = %v, want %v", name, got, tt.want)
		}
	}
}

// When several deletion rules are due at once, the most destructive not
// yet done runs.
func TestDeletionRulesRunTheMostDestructiveDueRule(t *testing.T) {
	end := metav1.NewTime(time.Unix(1000, 0))
	rule := func(p rayv1.DeletionPolicyType, ttl int32) rayv1.DeletionRule {
		return rayv1.DeletionRule{Policy: p, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(rayv1.JobStatusSucceeded), TTLSeconds: ttl}}
	}
	job := &rayv1.RayJob{
		Spec: rayv1.RayJobSpec{DeletionStrategy: &rayv1.DeletionStrategy{DeletionRules: []rayv1.DeletionRule{
			rule(rayv1.DeleteWorkers, 0), rule(rayv1.DeleteCluster, 10), rule(rayv1.DeleteSelf, 100)}}},
		Status: rayv1.RayJobStatus{JobStatus: rayv1.JobStatusSucceeded, JobDeploymentStatus: rayv1.JobDeploymentStatusComplete, EndTime: &end},
	}
	r := &Reconciler{}
	running := &rayv1.RayCluster{Spec: rayv1.RayClusterSpec{WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{GroupName: "cpu"}}}}
	for _, tt := range []struct {
		after   time.Duration
		cluster *rayv1.RayCluster
		want    rayv1.DeletionPolicyType
	}{
		{5 * time.Second, running, rayv1.DeleteWorkers},
		{50 * time.Second, running, rayv1.DeleteCluster},
		{50 * time.Second, nil, ""}, // the cluster is gone: nothing due
		{500 * time.Second, nil, rayv1.DeleteSelf},
	} {
		s := &scope{now: end.Add(tt.after), cluster: tt.cluster}
		s.Object = job
		var due rayv1.DeletionPolicyType
		if rule := r.dueRule(s); rule != nil {
			due = rule.Policy
		}
		if due != tt.want {
			t.Errorf("%v after the end: %q due, want %q", tt.after, due, tt.want)
		}
	}
}

// The deadlines fail the RayJob with KubeRay's reasons once passed, and
// ask to be back when they fall due.
func TestDeadlines(t *testing.T) {
	start := metav1.NewTime(time.Unix(1000, 0))
	for _, tt := range []struct {
		name   string
		spec   rayv1.RayJobSpec
		after  time.Duration
		check  func(*scope) bool
		want   rayv1.JobFailedReason
		failed bool
	}{
		{"active before", rayv1.RayJobSpec{ActiveDeadlineSeconds: ptr.To[int32](60)}, 30 * time.Second, (&Reconciler{}).activeDeadlineExceeded, "", false},
		{"active passed", rayv1.RayJobSpec{ActiveDeadlineSeconds: ptr.To[int32](60)}, 61 * time.Second, (&Reconciler{}).activeDeadlineExceeded, rayv1.DeadlineExceeded, true},
		{"pre-running passed", rayv1.RayJobSpec{PreRunningDeadlineSeconds: ptr.To[int32](10)}, 10 * time.Second, preRunningDeadlineExceeded, rayv1.PreRunningDeadlineExceeded, true},
		{"none set", rayv1.RayJobSpec{}, time.Hour, preRunningDeadlineExceeded, "", false},
	} {
		job := &rayv1.RayJob{Spec: tt.spec, Status: rayv1.RayJobStatus{StartTime: &start, JobDeploymentStatus: rayv1.JobDeploymentStatusInitializing}}
		s := &scope{now: start.Add(tt.after)}
		s.Object = job
		if got := tt.check(s); got != tt.failed || job.Status.Reason != tt.want {
			t.Errorf("%s: failed %v reason %q, want %v %q", tt.name, got, job.Status.Reason, tt.failed, tt.want)
		}
		if d, ok := s.Requeue.Duration(); !tt.failed && tt.spec.ActiveDeadlineSeconds != nil && (!ok || d != 30*time.Second) {
			t.Errorf("%s: requeue %v %v, want in 30s", tt.name, d, ok)
		}
	}
}
