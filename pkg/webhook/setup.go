package webhook

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Workload names accepted by Setup; they match --controllers.
const (
	WorkloadRayCluster = "raycluster"
	WorkloadTrainJob   = "trainjob"
	WorkloadSlurm      = "slurm"
)

// Options carry what the validators need from the manager's configuration.
type Options struct {
	// Features are the manager's feature gates; the RayCluster, RayJob and
	// RayService webhooks derive their spec options from them exactly as
	// their reconcilers do (validation.SpecValidationOptionsFromGates,
	// validation.RayJobValidationOptionsFromGates,
	// validation.RayServiceValidationOptionsFromGates).
	Features featuregate.FeatureGate

	// Reader reads the objects admission looks up: the runtime a TrainJob
	// references, its JobSet, the ConfigMaps a Controller references. Nil
	// means the manager's API reader: uncached, so an object created just
	// before the one being admitted is always seen, and no informer is
	// started for ConfigMaps the cache filters out.
	Reader client.Reader

	// Clock stamps TrainJob runtime patches; nil means the real clock.
	Clock clock.PassiveClock

	// RayMaxPodsPerCluster is --ray-max-pods-per-cluster, the most Pods one
	// RayCluster may have; 0 means validation.DefaultMaxPodsPerCluster.
	RayMaxPodsPerCluster int32
}

// Setup registers the webhooks of the named workloads ("raycluster",
// "trainjob", "slurm"; "all" means every one) with mgr's webhook server.
// Names without webhooks are ignored, so the --controllers selection can be
// passed as is. The manager's scheme must hold the workloads' API types.
func Setup(mgr ctrl.Manager, workloads []string, opts Options) error {
	if opts.Reader == nil {
		opts.Reader = mgr.GetAPIReader()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	enabled := func(name string) bool {
		return slices.Contains(workloads, name) || slices.Contains(workloads, "all")
	}
	families := []struct {
		name  string
		setup func(ctrl.Manager, Options) error
	}{
		{WorkloadRayCluster, setupRayCluster},
		// The RayJob and RayService controllers run under
		// --controllers=raycluster.
		{WorkloadRayCluster, setupRayJob},
		{WorkloadRayCluster, setupRayService},
		{WorkloadTrainJob, setupTrainer},
		{WorkloadSlurm, setupSlurm},
		{WorkloadSlurm, setupLoginSet},
		{WorkloadSlurm, setupAccounting},
	}
	for _, f := range families {
		if !enabled(f.name) {
			continue
		}
		if err := f.setup(mgr, opts); err != nil {
			return fmt.Errorf("setting up the %s webhooks: %w", f.name, err)
		}
	}
	return nil
}

// invalid is the admission error for errs, nil when there are none.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, errs)
}

// beingDeleted reports an update that only finishes a deletion: such
// updates (finalizer removal) are admitted without validation.
func beingDeleted(obj metav1.Object) bool {
	return obj.GetDeletionTimestamp() != nil
}
