package raycluster

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/features"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Integration registers the RayCluster controller with the manager, its
// flags at their defaults.
func Integration() workload.Integration { return IntegrationWith(NewFlags()) }

// IntegrationWith is Integration with the flags f.
func IntegrationWith(f *Flags) workload.Integration {
	return workload.Integration{Name: Name, AddToScheme: []func(*runtime.Scheme) error{rayv1.AddToScheme},
		FeatureGates: features.FeatureGates(), Flags: f, SetupIndexes: setupIndexes,
		// KubeRay v1.7.0 ships --reconcile-concurrency 1. A RayCluster's
		// first reconcile waits on the API server for each Pod, its
		// Service and its status; with one worker a burst of new clusters
		// queues behind those waits (at 1,000 clusters, 1 worker: every
		// Pod at 170 s; 8 workers: 125 s, the machine's two cores then
		// busy; docs/benchmarks.md). Each cluster is still reconciled by
		// one worker at a time (the workqueue's guarantee); the state the
		// reconcilers share between clusters is behind locks.
		DefaultWorkers: 8,
		Setup: func(ctx context.Context, mgr ctrl.Manager, opts workload.Options) error {
			_, err := Setup(ctx, mgr, opts, f)
			return err
		}}
}

// Flags are the RayCluster controller's own flags.
type Flags struct {
	// MaxPodsPerCluster caps one RayCluster's Pods (head and workers), at
	// admission and in the reconciler.
	MaxPodsPerCluster int32
	// BatchScheduler is KubeRay's --batch-scheduler (after the deprecated
	// --enable-batch-scheduler is folded in): the scheduler every Ray Pod
	// is given to, or "" for the default one.
	BatchScheduler       string
	legacyBatchScheduler bool
}

// NewFlags are the flags at their defaults.
func NewFlags() *Flags { return &Flags{MaxPodsPerCluster: validation.DefaultMaxPodsPerCluster} }

// AddFlags registers --ray-max-pods-per-cluster, --batch-scheduler and
// KubeRay's deprecated --enable-batch-scheduler.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.Int32Var(&f.MaxPodsPerCluster, "ray-max-pods-per-cluster", validation.DefaultMaxPodsPerCluster,
		"The most Pods (head and workers: replicas × numOfHosts summed over groups) one RayCluster may have. Admission refuses a RayCluster over it; "+
			"for one admitted before, the reconciler keeps the head, creates no workers and sets the ReplicaFailure condition (reason PodLimitExceeded).")
	fs.StringVar(&f.BatchScheduler, "batch-scheduler", "",
		fmt.Sprintf("KubeRay's batch scheduler for RayCluster Pods: one of %s, or empty for the default scheduler. Volcano and scheduler-plugins also get a PodGroup per cluster.", strings.Join(podspec.BatchSchedulers, ", ")))
	fs.BoolVar(&f.legacyBatchScheduler, "enable-batch-scheduler", false, "Deprecated (KubeRay's): the same as --batch-scheduler=volcano.")
}

// Complete folds the deprecated switch into BatchScheduler and checks both
// flags.
func (f *Flags) Complete() (err error) {
	if f.BatchScheduler, err = podspec.ValidateBatchScheduler(f.BatchScheduler, f.legacyBatchScheduler); err != nil {
		return err
	}
	if f.MaxPodsPerCluster < 1 {
		return fmt.Errorf("--ray-max-pods-per-cluster must be at least 1 (the head Pod)")
	}
	return nil
}

// setupIndexes registers the Pod index the reconciler lists a cluster's
// Pods through.
func setupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &corev1.Pod{}, IndexPodCluster, podClusterIndex)
}

// Setup starts the RayCluster controller with the flags f and KubeRay's
// environment, and returns the configuration it runs with, for the other
// Ray controllers to build alike.
func Setup(_ context.Context, mgr ctrl.Manager, opts workload.Options, f *Flags) (Config, error) {
	// KubeRay's environment variables are honoured, read once here.
	cfg := ConfigFromEnv(os.Getenv, opts.Features)
	if path := os.Getenv(ConfigFileEnv); path != "" {
		ignored, err := LoadConfigFile(path, &cfg)
		if err != nil {
			return Config{}, err
		}
		log := ctrl.Log.WithName(Name)
		log.Info("read the KubeRay configuration file", "path", path, "headSidecars", len(cfg.Build.HeadSidecarContainers),
			"workerSidecars", len(cfg.Build.WorkerSidecarContainers), "defaultContainerEnvs", len(cfg.Build.DefaultContainerEnvs))
		if len(ignored) > 0 {
			log.Info("ignored the KubeRay operator settings of the configuration file: the manager's flags set them", "keys", ignored)
		}
	}
	cfg.AllowWorkerGroupSuspend = validation.SpecValidationOptionsFromGates(opts.Features).AllowWorkerGroupSuspend
	if cfg.Build.BatchScheduler == "" {
		cfg.Build.BatchScheduler = f.BatchScheduler
	} else if f.BatchScheduler != "" && f.BatchScheduler != cfg.Build.BatchScheduler {
		return Config{}, fmt.Errorf("--batch-scheduler=%s and the KubeRay configuration file's batch scheduler %s disagree; set one", f.BatchScheduler, cfg.Build.BatchScheduler)
	}
	if cfg.Build.BatchScheduler != "" {
		ctrl.Log.WithName(Name).Info("RayCluster Pods go to a batch scheduler", "batchScheduler", cfg.Build.BatchScheduler)
	}
	if f.MaxPodsPerCluster > 0 {
		cfg.MaxPodsPerCluster = f.MaxPodsPerCluster
	}
	r, err := New(mgr, Options{Options: opts, Config: cfg})
	if err != nil {
		return Config{}, err
	}
	return cfg, r.SetupWithManager(mgr)
}
