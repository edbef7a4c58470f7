package rayjob

import (
	"strconv"
	"strings"
	"time"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

// Config is what the RayJob controller reads once at start-up: KubeRay's
// environment variables and gates.
type Config struct {
	// Build is the RayCluster controller's Pod and Service options (the
	// cluster domain, the head Service type) for the RayJob's own head
	// Service.
	Build podspec.BuildOptions
	// TransitionGracePeriod: a Ray job that ended this long ago while its
	// submitter still runs ends the RayJob anyway
	// (RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS, 300).
	// Zero is the default; NoTransitionGracePeriod (any negative) ends it
	// as soon as the Ray job has.
	TransitionGracePeriod time.Duration
	// StatusCheckTimeout: a dashboard that cannot tell the job's status for
	// this long fails the RayJob (RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS, 300).
	StatusCheckTimeout time.Duration
	// SubmitterFinishedTimeout: a submitter that finished this long ago
	// while the Ray job has not ended fails the RayJob (KubeRay's
	// DefaultSubmitterFinishedTimeout, 30 s).
	SubmitterFinishedTimeout time.Duration
	// DeleteRayJobAfterFinishes makes shutdownAfterJobFinishes delete the
	// RayJob itself (DELETE_RAYJOB_CR_AFTER_JOB_FINISHES).
	DeleteRayJobAfterFinishes bool
	// DeletionPolicy is KubeRay's RayJobDeletionPolicy gate.
	DeletionPolicy bool
	// SidecarSubmitterRestart is KubeRay's gate of that name.
	SidecarSubmitterRestart bool
	// Validation are the options of the RayJob rules (the gates they
	// read), the webhook's.
	Validation validation.RayJobValidationOptions
}

// The KubeRay defaults.
const (
	DefaultTransitionGracePeriod    = 300 * time.Second
	DefaultStatusCheckTimeout       = 300 * time.Second
	DefaultSubmitterFinishedTimeout = 30 * time.Second
	// NoTransitionGracePeriod is the grace period of
	// RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS=0 (or below),
	// which KubeRay takes as none.
	NoTransitionGracePeriod = -time.Nanosecond
)

// ConfigFromEnv reads KubeRay's environment variables; gates and build
// options are the caller's.
func ConfigFromEnv(getenv func(string) string) Config {
	seconds := func(name string, def time.Duration) time.Duration {
		if s, err := strconv.Atoi(strings.TrimSpace(getenv(name))); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
		return def
	}
	grace := seconds("RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS", DefaultTransitionGracePeriod)
	if s, err := strconv.Atoi(strings.TrimSpace(getenv("RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS"))); err == nil && s <= 0 {
		// KubeRay takes any integer here: none at all is no grace.
		grace = NoTransitionGracePeriod
	}
	return Config{
		Build:                     podspec.DefaultBuildOptions(),
		TransitionGracePeriod:     grace,
		StatusCheckTimeout:        seconds("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", DefaultStatusCheckTimeout),
		SubmitterFinishedTimeout:  DefaultSubmitterFinishedTimeout,
		DeleteRayJobAfterFinishes: strings.EqualFold(strings.TrimSpace(getenv("DELETE_RAYJOB_CR_AFTER_JOB_FINISHES")), "true"),
		DeletionPolicy:            true,
		Validation:                validation.RayJobValidationOptions{AllowDeletionStrategy: true},
	}
}

func (c Config) withDefaults() Config {
	if c.Build.ClusterDomain == "" {
		c.Build = podspec.DefaultBuildOptions()
	}
	if c.TransitionGracePeriod == 0 {
		c.TransitionGracePeriod = DefaultTransitionGracePeriod
	}
	if c.StatusCheckTimeout <= 0 {
		c.StatusCheckTimeout = DefaultStatusCheckTimeout
	}
	if c.SubmitterFinishedTimeout <= 0 {
		c.SubmitterFinishedTimeout = DefaultSubmitterFinishedTimeout
	}
	return c
}

// mode is the RayJob's submission mode; the CRD defaults it to K8sJobMode.
func mode(job *rayv1.RayJob) rayv1.JobSubmissionMode {
	if job.Spec.SubmissionMode == "" {
		return rayv1.K8sJobMode
	}
	return job.Spec.SubmissionMode
}

// hasSubmitter: in K8sJobMode and SidecarMode a submitter follows the
// job's logs, and the RayJob ends only once it has finished.
func hasSubmitter(job *rayv1.RayJob) bool {
	m := mode(job)
	return m == rayv1.K8sJobMode || m == rayv1.SidecarMode
}
