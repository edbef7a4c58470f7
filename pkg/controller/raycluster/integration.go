package raycluster

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Integration registers the RayCluster controller with the manager.
func Integration() workload.Integration {
	return workload.Integration{Name: Name, AddToScheme: []func(*runtime.Scheme) error{rayv1.AddToScheme},
		FeatureGates: FeatureGates(), Setup: setup}
}

func setup(_ context.Context, mgr ctrl.Manager, opts workload.Options) error {
	// KubeRay's environment variables are honoured, read once here.
	cfg := ConfigFromEnv(os.Getenv, opts.Features)
	if path := os.Getenv(ConfigFileEnv); path != "" {
		ignored, err := LoadConfigFile(path, &cfg)
		if err != nil {
			return err
		}
		log := ctrl.Log.WithName(Name)
		log.Info("read the KubeRay configuration file", "path", path, "headSidecars", len(cfg.Build.HeadSidecarContainers),
			"workerSidecars", len(cfg.Build.WorkerSidecarContainers), "defaultContainerEnvs", len(cfg.Build.DefaultContainerEnvs))
		if len(ignored) > 0 {
			log.Info("ignored the KubeRay operator settings of the configuration file: the manager's flags set them", "keys", ignored)
		}
	}
	cfg.AllowWorkerGroupSuspend = SpecValidationOptionsFromGates(opts.Features).AllowWorkerGroupSuspend
	if cfg.Build.BatchScheduler == "" {
		cfg.Build.BatchScheduler = opts.RayBatchScheduler
	} else if opts.RayBatchScheduler != "" && opts.RayBatchScheduler != cfg.Build.BatchScheduler {
		return fmt.Errorf("--batch-scheduler=%s and the KubeRay configuration file's batch scheduler %s disagree; set one", opts.RayBatchScheduler, cfg.Build.BatchScheduler)
	}
	if cfg.Build.BatchScheduler != "" {
		ctrl.Log.WithName(Name).Info("RayCluster Pods go to a batch scheduler", "batchScheduler", cfg.Build.BatchScheduler)
	}
	if opts.RayMaxPodsPerCluster > 0 {
		cfg.MaxPodsPerCluster = opts.RayMaxPodsPerCluster
	}
	r, err := New(mgr, Options{Options: opts, Config: cfg})
	if err != nil {
		return err
	}
	return r.SetupWithManager(mgr)
}
