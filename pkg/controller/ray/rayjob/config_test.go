package rayjob

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS as KubeRay
// v1.7.0 reads it: any integer (0 or below: the RayJob ends as soon as
// the Ray job has), anything else the default 300 s.
func TestTransitionGracePeriodFromEnv(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		env      string
		endedAgo time.Duration
		want     bool
	}{
		{env: "", endedAgo: 299 * time.Second},
		{env: "", endedAgo: 300 * time.Second, want: true},
		{env: "ten", endedAgo: 299 * time.Second},
		{env: "10", endedAgo: 9 * time.Second},
		{env: "10", endedAgo: 10 * time.Second, want: true},
		{env: "0", endedAgo: 0, want: true},
		{env: "-5", endedAgo: 0, want: true},
	} {
		cfg := ConfigFromEnv(func(name string) string {
			if name == "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS" {
				return tt.env
			}
			return ""
		}).withDefaults()
		r := &Reconciler{cfg: cfg}
		job := &rayv1.RayJob{Status: rayv1.RayJobStatus{
			JobDeploymentStatus: rayv1.JobDeploymentStatusRunning,
			JobStatus:           rayv1.JobStatusSucceeded,
			RayJobStatusInfo:    rayv1.RayJobStatusInfo{EndTime: &metav1.Time{Time: now.Add(-tt.endedAgo)}},
		}}
		s := &scope{now: now}
		s.Object = job
		if got := r.gracePeriodExceeded(s); got != tt.want {
			t.Errorf("grace period %q, Ray job ended %v ago: ended the RayJob %v, want %v", tt.env, tt.endedAgo, got, tt.want)
		}
	}
}
