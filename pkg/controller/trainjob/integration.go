package trainjob

import (
	"context"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/runtime"
)

// Name is the controller's name in --controllers.
const Name = "trainjob"

// ProgressConditions adds Gantry's Created=True and Running conditions to
// a TrainJob's status. Off by default: Trainer v2.3 has neither, and the
// Kubeflow SDK reports a job Running only while its status has no
// condition at all, so with them wait_for_job_status({"Running"}) would
// never return.
const ProgressConditions featuregate.Feature = "TrainJobProgressConditions"

// Integration registers the TrainJob controller with the manager.
func Integration() workload.Integration {
	return workload.Integration{
		Name:        Name,
		AddToScheme: []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme},
		FeatureGates: map[featuregate.Feature]featuregate.FeatureSpec{
			ProgressConditions: {Default: false, PreRelease: featuregate.Alpha},
		},
		Setup: setup,
	}
}

func setup(_ context.Context, mgr ctrl.Manager, opts workload.Options) error {
	d, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	// Without JobSet's CRD the controller's JobSet watch could not start.
	// Rather than failing the whole manager (and with it Ray and Slurm),
	// the controller waits for the CRD and starts once it is served.
	return setupWhenJobSetServed(mgr, d, jobSetCRDPollInterval, func() error {
		r, err := NewReconcilerForManager(mgr, opts.Features != nil && opts.Features.Enabled(ProgressConditions))
		if err != nil {
			return err
		}
		return r.SetupWithManager(mgr, opts.MaxConcurrentReconciles)
	})
}

// NewReconcilerForManager wires a reconciler to the manager's cached
// client, REST mapper (to notice the optional PodGroup CRD), event
// recorder and controller-runtime's metrics registry; progress turns on
// the ProgressConditions.
func NewReconcilerForManager(mgr ctrl.Manager, progress bool) (*Reconciler, error) {
	metrics, err := NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return nil, err
	}
	rt, err := runtime.New(runtime.Options{Existing: mgr.GetClient(), RESTMapper: mgr.GetRESTMapper(), ProgressConditions: progress})
	if err != nil {
		return nil, err
	}
	return NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), rt, mgr.GetEventRecorder(ControllerName), metrics), nil
}
