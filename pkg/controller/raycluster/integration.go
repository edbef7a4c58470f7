package raycluster

import (
	"context"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Name is the controller's name in --controllers.
const Name = "raycluster"

// RayJobDeletionPolicy is KubeRay's gate that allows suspending single
// worker groups (RayJob's deletion policy uses it).
const RayJobDeletionPolicy featuregate.Feature = "RayJobDeletionPolicy"

// Integration registers the RayCluster controller with the manager.
func Integration() workload.Integration {
	gates := FeatureGates()
	gates[RayJobDeletionPolicy] = featuregate.FeatureSpec{Default: false, PreRelease: featuregate.Alpha}
	return workload.Integration{
		Name:         Name,
		AddToScheme:  []func(*runtime.Scheme) error{rayv1.AddToScheme},
		FeatureGates: gates,
		Setup:        setup,
	}
}

func setup(_ context.Context, mgr ctrl.Manager, opts workload.Options) error {
	// KubeRay's environment variables are honoured, read once here.
	cfg := ConfigFromEnv(os.Getenv, opts.Features)
	cfg.AllowWorkerGroupSuspend = SpecValidationOptionsFromGates(opts.Features).AllowWorkerGroupSuspend
	if opts.RayMaxPodsPerCluster > 0 {
		cfg.MaxPodsPerCluster = opts.RayMaxPodsPerCluster
	}
	metrics, err := NewClusterMetrics(ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	r := NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(ControllerName), metrics, cfg)
	return r.SetupWithManager(mgr, opts.MaxConcurrentReconciles)
}
