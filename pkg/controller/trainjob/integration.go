package trainjob

import (
	"context"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Name is the controller's name in --controllers.
const Name = "trainjob"

// Integration registers the TrainJob controller with the manager.
func Integration() workload.Integration {
	return workload.Integration{
		Name:         Name,
		AddToScheme:  []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme},
		FeatureGates: FeatureGates(),
		SetupIndexes: setupRuntimeIndex,
		Setup:        setup,
	}
}

func setup(_ context.Context, mgr ctrl.Manager, opts workload.Options) error {
	d, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	if err := setupRuntimeFinalizerCleanup(mgr); err != nil {
		return err
	}
	// Without JobSet's CRD the controller's JobSet watch could not start.
	// Rather than failing the whole manager (and with it Ray and Slurm),
	// the controller waits for the CRD and starts once it is served.
	return setupWhenJobSetServed(mgr, d, jobSetCRDPollInterval, func() error {
		r, err := New(mgr, Options{Options: opts})
		if err != nil {
			return err
		}
		return r.SetupWithManager(mgr)
	})
}
