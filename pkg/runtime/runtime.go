package runtime

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/coscheduling"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/flux"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/jax"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/jobset"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/mpi"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/plainml"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/torch"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/trainjobstatus"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/volcano"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/xgboost"
)

// Re-exported so the controller needs only this package.
type (
	// Component is one object to put in the cluster; see plugin.Component.
	Component = plugin.Component
	// Info is the intermediate representation; see plugin.Info.
	Info = plugin.Info
)

var (
	// ErrUnsupportedPolicy marks the MPI implementations Gantry cannot run.
	ErrUnsupportedPolicy = plugin.ErrUnsupportedPolicy
	// IsBuildError reports errors that only a change of the TrainJob or runtime can fix.
	IsBuildError = plugin.IsBuildError
)

// Options configure a Runtime.
type Options struct {
	// Existing reads objects already in the cluster (usually the manager's
	// cached client). Builders use it to create the MPI SSH Secret only
	// once and to leave a running JobSet or PodGroup alone. Required.
	Existing client.Reader
	// RESTMapper tells whether optional CRDs (the coscheduling and Volcano
	// PodGroups) are installed. Nil means none are.
	RESTMapper meta.RESTMapper
	// ProgressConditions adds Gantry's Created=True and Running conditions
	// to the status (feature gate TrainJobProgressConditions). Off, the
	// status has Trainer's condition set, which the Kubeflow SDK needs: it
	// reports a job Running only while its status has no condition.
	ProgressConditions bool
	// StatusServer, when set (feature gate TrainJobStatus), tells trainer
	// containers where to report progress (plugin trainjobstatus).
	StatusServer *trainjobstatus.Config
	// ElasticPyTorch is the TrainJobElasticPyTorch gate: on, TrainJobs on a
	// runtime with mlPolicy.torch.elasticPolicy run torchrun in elastic
	// mode and may change spec.trainer.numNodes while they run.
	ElasticPyTorch bool
	// ClusterDomain is the cluster DNS suffix (elastic PyTorch's rendezvous
	// endpoint, the Flux brokers' addresses); empty means cluster.local.
	ClusterDomain string
}

// Runtime builds and validates TrainJobs with the fixed plugin order
// documented in the package comment. It is safe for concurrent use: it
// holds no per-job state.
type Runtime struct {
	fw       *plugin.Framework
	existing client.Reader
	progress bool
	elastic  bool
}

// Result is what NewObjects produces.
type Result struct {
	// Components are the objects to apply (field owner "trainer", forced),
	// or to create when CreateOnly, in this order.
	Components []Component
	// Warnings deserve a Warning event but did not stop the build.
	Warnings []string
	// Info is the resolved intermediate representation, for logging and tests.
	Info *Info
}

// New returns a Runtime with the default plugins.
func New(opts Options) (*Runtime, error) {
	if opts.Existing == nil {
		return nil, errors.New("runtime: Options.Existing is required")
	}
	fw, err := plugin.New(
		plainml.PlainML{},
		torch.Torch{ClusterDomain: opts.ClusterDomain},
		mpi.MPI{},
		jax.JAX,
		xgboost.XGBoost,
		flux.Flux{ClusterDomain: opts.ClusterDomain},
		trainjobstatus.TrainJobStatus{Config: opts.StatusServer},
		coscheduling.New(opts.RESTMapper),
		volcano.New(opts.RESTMapper),
		jobset.JobSet{},
	)
	if err != nil {
		return nil, err
	}
	return &Runtime{fw: fw, existing: opts.Existing, progress: opts.ProgressConditions, elastic: opts.ElasticPyTorch}, nil
}

// ProgressConditions reports whether the status carries Gantry's Created=True
// and Running conditions (see Options.ProgressConditions).
func (r *Runtime) ProgressConditions() bool { return r.progress }

// ElasticPyTorch reports whether the TrainJobElasticPyTorch gate is on (see
// Options.ElasticPyTorch).
func (r *Runtime) ElasticPyTorch() bool { return r.elastic }

// PluginNames lists the plugins in the order they run.
func (r *Runtime) PluginNames() []string { return r.fw.PluginNames() }

// NewObjects validates trainJob against spec and renders the objects that
// run it. Errors the TrainJob or runtime must fix are BuildErrors; others
// (reading existing objects) are worth a retry.
func (r *Runtime) NewObjects(ctx context.Context, trainJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) (*Result, error) {
	if r == nil || r.fw == nil {
		return nil, errors.New("runtime: not initialised")
	}
	if trainJob == nil || spec == nil {
		return nil, plugin.NewBuildError("a TrainJob and its runtime spec are required")
	}
	if err := unsupportedPolicies(spec); err != nil {
		return nil, err
	}
	if errs := ValidateTrainJob(trainJob); len(errs) > 0 {
		return nil, &plugin.BuildError{Err: errs.ToAggregate()}
	}
	if errs := r.validate(nil, trainJob, spec); len(errs) > 0 {
		return nil, &plugin.BuildError{Err: errs.ToAggregate()}
	}
	info, err := plugin.NewInfo(trainJob, spec)
	if err != nil {
		return nil, err
	}
	steps := []func(*plugin.Info, *trainer.TrainJob) error{
		r.fw.RunEnforceMLPolicyPlugins,
		r.fw.RunEnforcePodGroupPolicyPlugins,
		r.fw.RunPodNetworkPlugins,
	}
	for _, step := range steps {
		if err := step(info, trainJob); err != nil {
			return nil, asBuildErrorIfUnsupported(err)
		}
	}
	comps, err := r.fw.RunComponentBuilderPlugins(ctx, r.existing, info, trainJob)
	if err != nil {
		return nil, err
	}
	return &Result{Components: comps, Warnings: info.Warnings, Info: info}, nil
}

// Validate returns what is wrong with newJob for the runtime spec; oldJob
// is nil on create. It reads nothing from the cluster, so a webhook can call
// it after resolving the runtime.
func (r *Runtime) Validate(oldJob, newJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) field.ErrorList {
	errs := r.validate(oldJob, newJob, spec)
	if oldJob == nil {
		errs = append(errs, r.validateElasticGate(newJob, spec)...)
	}
	return errs
}

// validate is Validate without the admission-only checks (the feature
// gates a new job needs), for the controller, which builds jobs that were
// admitted while a gate may have been on.
func (r *Runtime) validate(oldJob, newJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) field.ErrorList {
	runtimeRef := field.NewPath("spec", "runtimeRef")
	if newJob == nil {
		return field.ErrorList{field.Required(field.NewPath("spec"), "a TrainJob is required")}
	}
	if spec == nil {
		return field.ErrorList{field.NotFound(runtimeRef, newJob.Spec.RuntimeRef.Name)}
	}
	if err := unsupportedPolicies(spec); err != nil {
		return field.ErrorList{field.Invalid(runtimeRef, newJob.Spec.RuntimeRef, err.Error())}
	}
	if errs := plugin.ValidateRuntimePatches(newJob, &spec.Template.Spec); len(errs) > 0 {
		return errs
	}
	if errs := ValidateInitializerMounts(newJob, spec); len(errs) > 0 {
		return errs
	}
	info, err := plugin.NewInfo(newJob, spec)
	if err != nil {
		return field.ErrorList{field.Invalid(runtimeRef, newJob.Spec.RuntimeRef, err.Error())}
	}
	errs := r.validateNumNodesUpdate(oldJob, newJob, spec)
	return append(errs, r.fw.RunCustomValidationPlugins(info, oldJob, newJob)...)
}

// Status derives the TrainJob status from its JobSet (nil when it does not
// exist); see jobset.TrainJobStatus for the mapping.
func (r *Runtime) Status(trainJob *trainer.TrainJob, jobSet *jobsetv1alpha2.JobSet, now metav1.Time) trainer.TrainJobStatus {
	return jobset.TrainJobStatus(trainJob, jobSet, now, r.progress)
}

func unsupportedPolicies(spec *trainer.TrainingRuntimeSpec) error {
	if spec.MLPolicy != nil && spec.MLPolicy.MPI != nil {
		if impl := ptr.Deref(spec.MLPolicy.MPI.MPIImplementation, trainer.MPIImplementationOpenMPI); impl != trainer.MPIImplementationOpenMPI && impl != "" {
			return &plugin.BuildError{Err: fmt.Errorf("MPI implementation %q: %w", impl, ErrUnsupportedPolicy)}
		}
	}
	return nil
}

func asBuildErrorIfUnsupported(err error) error {
	if errors.Is(err, ErrUnsupportedPolicy) && !plugin.IsBuildError(err) {
		return &plugin.BuildError{Err: err}
	}
	return err
}
