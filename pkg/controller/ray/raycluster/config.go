package raycluster

import (
	"strconv"
	"strings"
	"time"

	"k8s.io/component-base/featuregate"

	"github.com/gantry-dev/gantry/pkg/controller/ray/features"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

// Defaults of the settings KubeRay takes from the operator's environment.
const (
	// DefaultRequeue is the unconditional resync interval (300 s upstream).
	DefaultRequeue = 300 * time.Second
	// ShortRequeue follows an error or a status change, so multi-step state
	// machines (suspend, cleanup) progress quickly.
	ShortRequeue = 2 * time.Second
	// headTerminationRequeue waits for a deleted head Pod to go away.
	headTerminationRequeue = 10 * time.Second
)

// Config holds every operator setting of the RayCluster controller. It is
// read once at start-up; reconcile paths never read the environment.
type Config struct {
	// DefaultRequeue is RAYCLUSTER_DEFAULT_REQUEUE_SECONDS.
	DefaultRequeue time.Duration
	// EnableGCSFTRedisCleanup is ENABLE_GCS_FT_REDIS_CLEANUP (default true).
	EnableGCSFTRedisCleanup bool
	// EnableRandomPodDelete is ENABLE_RANDOM_POD_DELETE: scale down by
	// deleting arbitrary workers even when the autoscaler is on.
	EnableRandomPodDelete bool
	// StatusConditions is the RayClusterStatusConditions gate.
	StatusConditions bool
	// AllowWorkerGroupSuspend permits spec.workerGroupSpecs[].suspend.
	AllowWorkerGroupSuspend bool
	// MaxPodsPerCluster is --ray-max-pods-per-cluster: no worker Pod is
	// created for a cluster whose spec asks for more Pods than this.
	MaxPodsPerCluster int32
	// Build are the pod and service builders' settings.
	Build podspec.BuildOptions
}

// ConfigFromEnv reads KubeRay's environment variables (same names, same
// defaults) and the feature gates. getenv is os.Getenv in the manager.
func ConfigFromEnv(getenv func(string) string, gates featuregate.FeatureGate) Config {
	cfg := Config{
		DefaultRequeue:          DefaultRequeue,
		EnableGCSFTRedisCleanup: true,
		StatusConditions:        true,
		MaxPodsPerCluster:       validation.DefaultMaxPodsPerCluster,
		Build:                   podspec.DefaultBuildOptions(),
	}
	// KubeRay's constant is named RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV and
	// its value is RAYCLUSTER_DEFAULT_REQUEUE_SECONDS; accept both spellings.
	for _, name := range []string{"RAYCLUSTER_DEFAULT_REQUEUE_SECONDS", "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV"} {
		if s, err := strconv.Atoi(strings.TrimSpace(getenv(name))); err == nil && s > 0 {
			cfg.DefaultRequeue = time.Duration(s) * time.Second
			break
		}
	}
	boolEnv := func(name string, def bool) bool {
		switch strings.ToLower(strings.TrimSpace(getenv(name))) {
		case "true", "1", "yes":
			return true
		case "false", "0", "no":
			return false
		}
		return def
	}
	cfg.EnableGCSFTRedisCleanup = boolEnv("ENABLE_GCS_FT_REDIS_CLEANUP", true)
	cfg.EnableRandomPodDelete = boolEnv("ENABLE_RANDOM_POD_DELETE", false)
	cfg.Build.InjectWaitGCSReady = boolEnv("ENABLE_INIT_CONTAINER_INJECTION", cfg.Build.InjectWaitGCSReady)
	cfg.Build.InjectProbes = boolEnv("ENABLE_PROBES_INJECTION", cfg.Build.InjectProbes)
	cfg.Build.LoginShell = boolEnv("ENABLE_LOGIN_SHELL", cfg.Build.LoginShell)
	cfg.Build.HeadClusterIPService = boolEnv("ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE", cfg.Build.HeadClusterIPService)
	cfg.Build.DeterministicHeadPodName = boolEnv("ENABLE_DETERMINISTIC_HEAD_POD_NAME", cfg.Build.DeterministicHeadPodName)
	if d := strings.TrimSpace(getenv("CLUSTER_DOMAIN")); d != "" {
		cfg.Build.ClusterDomain = d
	}
	if gates != nil {
		cfg.StatusConditions = gates.Enabled(features.RayClusterStatusConditions)
		cfg.Build.MultiHostIndexing = gates.Enabled(features.RayMultiHostIndexing)
	}
	return cfg
}
