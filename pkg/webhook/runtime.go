package webhook

import (
	"context"
	"fmt"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/torch"
)

// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainingruntime,mutating=false,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainingruntimes,verbs=create;update,versions=v1alpha1,name=vtrainingruntime.trainer.kubeflow.org,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime,mutating=false,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=clustertrainingruntimes,verbs=create;update,versions=v1alpha1,name=vclustertrainingruntime.trainer.kubeflow.org,admissionReviewVersions=v1

// Runtime labels Trainer v2.3 reads at admission.
const (
	labelSupport                = "trainer.kubeflow.org/support"
	supportDeprecated           = "deprecated"
	runtimeDeprecationPolicyURL = "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)

var (
	templatePath       = field.NewPath("spec", "template", "spec", "replicatedJobs")
	mlPolicyPath       = field.NewPath("spec", "mlPolicy")
	torchProcsPerNode  = []string{"auto", "cpu", "gpu"}
	stepContainerNames = map[string]string{
		trainer.AncestorTrainer:            trainer.TrainerNodeName,
		trainer.AncestorDatasetInitializer: trainer.DatasetInitializerName,
		trainer.AncestorModelInitializer:   trainer.ModelInitializerName,
	}
)

// TrainingRuntimeValidator validates TrainingRuntimes; see validateRuntimeSpec.
type TrainingRuntimeValidator struct {
	Runtime *runtime.Runtime
}

var _ admission.Validator[*trainer.TrainingRuntime] = (*TrainingRuntimeValidator)(nil)

// ValidateCreate implements admission.Validator.
func (v *TrainingRuntimeValidator) ValidateCreate(_ context.Context, obj *trainer.TrainingRuntime) (admission.Warnings, error) {
	warnings, errs := validateRuntimeSpec(v.Runtime, obj.Name, &obj.Spec)
	return warnings, invalid(trainer.GroupVersion.WithKind(trainer.TrainingRuntimeKind).GroupKind(), obj.Name, errs)
}

// ValidateUpdate implements admission.Validator. Upstream validates only on
// create; Gantry also validates a changed spec, since every TrainJob of the
// runtime is built from it. Metadata-only updates (the resource-in-use
// finalizer) are admitted as they are.
func (v *TrainingRuntimeValidator) ValidateUpdate(ctx context.Context, oldObj, newObj *trainer.TrainingRuntime) (admission.Warnings, error) {
	if beingDeleted(newObj) || equality.Semantic.DeepEqual(oldObj.Spec, newObj.Spec) {
		return nil, nil
	}
	return v.ValidateCreate(ctx, newObj)
}

// ValidateDelete implements admission.Validator.
func (v *TrainingRuntimeValidator) ValidateDelete(context.Context, *trainer.TrainingRuntime) (admission.Warnings, error) {
	return nil, nil
}

// ClusterTrainingRuntimeValidator validates ClusterTrainingRuntimes; see
// validateRuntimeSpec. Runtimes labelled trainer.kubeflow.org/support:
// deprecated get Trainer's deprecation warning.
type ClusterTrainingRuntimeValidator struct {
	Runtime *runtime.Runtime
}

var _ admission.Validator[*trainer.ClusterTrainingRuntime] = (*ClusterTrainingRuntimeValidator)(nil)

// ValidateCreate implements admission.Validator.
func (v *ClusterTrainingRuntimeValidator) ValidateCreate(_ context.Context, obj *trainer.ClusterTrainingRuntime) (admission.Warnings, error) {
	warnings, errs := validateRuntimeSpec(v.Runtime, obj.Name, &obj.Spec)
	if obj.Labels[labelSupport] == supportDeprecated {
		warnings = append(warnings, fmt.Sprintf(
			"ClusterTrainingRuntime %q is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: %s",
			obj.Name, runtimeDeprecationPolicyURL))
	}
	return warnings, invalid(trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind).GroupKind(), obj.Name, errs)
}

// ValidateUpdate implements admission.Validator; as for TrainingRuntime.
func (v *ClusterTrainingRuntimeValidator) ValidateUpdate(_ context.Context, oldObj, newObj *trainer.ClusterTrainingRuntime) (admission.Warnings, error) {
	if beingDeleted(newObj) || equality.Semantic.DeepEqual(oldObj.Spec, newObj.Spec) {
		return nil, nil
	}
	warnings, errs := validateRuntimeSpec(v.Runtime, newObj.Name, &newObj.Spec)
	return warnings, invalid(trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind).GroupKind(), newObj.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (v *ClusterTrainingRuntimeValidator) ValidateDelete(context.Context, *trainer.ClusterTrainingRuntime) (admission.Warnings, error) {
	return nil, nil
}

// validateRuntimeSpec checks a runtime's template and policies:
//
//   - Trainer v2.3's rules: a replicated job labelled as a TrainJob step
//     (trainer, dataset-initializer, model-initializer) has replicas 1 and
//     the container the step overrides (node, dataset-initializer,
//     model-initializer). Gantry also accepts a "launcher" container in the
//     launcher job of an MPI runtime, which its MPI plugin runs as such.
//   - structural rules: at least one replicated job, at most one job per
//     step, at most one ML policy, numNodes >= 1, torch numProcPerNode
//     auto/cpu/gpu or a positive integer, torch envInjection targets that
//     list containers other than node (the CRD's rules, for older CRDs),
//     MPI slots >= 1 and an absolute SSH mount path, Flux processes per
//     node >= 1.
//   - what every TrainJob of the runtime would be rejected for: the runtime
//     framework's validation of a TrainJob that overrides nothing (an MPI
//     runtime without launcher or node job, torch envInjection targets that
//     do not exist).
//
// Policies Gantry cannot run (MPI implementations other than OpenMPI), and
// an elastic torch policy while the TrainJobElasticPyTorch gate is off, are
// admitted with a warning, so runtimes written for Trainer apply unchanged;
// TrainJobs that reference them are rejected.
func validateRuntimeSpec(rt *runtime.Runtime, name string, spec *trainer.TrainingRuntimeSpec) (admission.Warnings, field.ErrorList) {
	errs := validateReplicatedJobs(spec)
	errs = append(errs, validateMLPolicy(spec.MLPolicy)...)
	warnings := unsupportedPolicyWarnings(spec)
	if torch.ElasticPolicy(spec.MLPolicy) != nil && !rt.ElasticPyTorch() {
		warnings = append(warnings, fmt.Sprintf("spec.mlPolicy.torch.elasticPolicy: the manager's %s feature gate is off; TrainJobs that reference this runtime are rejected", torch.ElasticGateName))
	}
	if len(errs) > 0 || len(warnings) > 0 {
		return warnings, errs
	}
	probe := &trainer.TrainJob{Spec: trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: name}}}
	for _, e := range rt.Validate(nil, probe, spec) {
		if e.Field == runtimeRefPath.String() {
			// The framework reports runtime faults at the TrainJob's runtimeRef.
			e = field.Invalid(templatePath, field.OmitValueType{}, e.Detail)
		}
		errs = append(errs, e)
	}
	return warnings, errs
}

func validateReplicatedJobs(spec *trainer.TrainingRuntimeSpec) field.ErrorList {
	rJobs := spec.Template.Spec.ReplicatedJobs
	if len(rJobs) == 0 {
		return field.ErrorList{field.Required(templatePath, "a runtime needs at least one replicated job")}
	}
	mpi := spec.MLPolicy != nil && spec.MLPolicy.MPI != nil
	var errs field.ErrorList
	stepOf := map[string]int{}
	for i, rJob := range rJobs {
		step := rJob.Template.Labels[trainer.LabelTrainJobAncestor]
		want, isStep := stepContainerNames[step]
		if !isStep {
			continue
		}
		jobPath := templatePath.Index(i)
		if first, dup := stepOf[step]; dup {
			e := field.Duplicate(jobPath.Child("template", "metadata", "labels").Key(trainer.LabelTrainJobAncestor), step)
			e.Detail = fmt.Sprintf("replicated job %q is already the %s step", rJobs[first].Name, step)
			errs = append(errs, e)
		} else {
			stepOf[step] = i
		}
		if rJob.Replicas != 1 {
			errs = append(errs, field.Invalid(jobPath.Child("replicas"), rJob.Replicas, "always must be 1"))
		}
		containers := rJob.Template.Spec.Template.Spec.Containers
		has := func(name string) bool {
			return slices.ContainsFunc(containers, func(c corev1.Container) bool { return c.Name == name })
		}
		mpiLauncher := mpi && step == trainer.AncestorTrainer && rJob.Name == trainer.LauncherName && has(trainer.LauncherName)
		if !has(want) && !mpiLauncher {
			names := make([]string, 0, len(containers))
			for _, c := range containers {
				names = append(names, c.Name)
			}
			errs = append(errs, field.Invalid(jobPath.Child("template", "spec", "template", "spec", "containers"), names,
				fmt.Sprintf("must contain the required container for the ancestor: %s (a container named %s)", step, want)))
		}
	}
	return errs
}

func validateMLPolicy(p *trainer.MLPolicy) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	if p.NumNodes != nil && *p.NumNodes < 1 {
		errs = append(errs, field.Invalid(mlPolicyPath.Child("numNodes"), *p.NumNodes, "must be greater than or equal to 1"))
	}
	set := 0
	for _, present := range []bool{p.Torch != nil, p.MPI != nil, p.JAX != nil, p.XGBoost != nil, p.Flux != nil} {
		if present {
			set++
		}
	}
	if set > 1 {
		errs = append(errs, field.Forbidden(mlPolicyPath, "Only one of the policy can be configured"))
	}
	if t := p.Torch; t != nil && t.NumProcPerNode != nil {
		n, procs := *t.NumProcPerNode, mlPolicyPath.Child("torch", "numProcPerNode")
		switch {
		case n.Type == intstr.Int && n.IntVal < 1:
			errs = append(errs, field.Invalid(procs, n.IntVal, "must be a positive integer, auto, cpu or gpu"))
		case n.Type == intstr.String && !slices.Contains(torchProcsPerNode, n.StrVal):
			errs = append(errs, field.NotSupported(procs, n.StrVal, slices.Concat(torchProcsPerNode, []string{"a positive integer"})))
		}
	}
	if t := p.Torch; t != nil && t.EnvInjection != nil {
		errs = append(errs, validateEnvInjectionTargets(t.EnvInjection)...)
	}
	if f := p.Flux; f != nil && f.NumProcPerNode != nil && *f.NumProcPerNode < 1 {
		errs = append(errs, field.Invalid(mlPolicyPath.Child("flux", "numProcPerNode"), *f.NumProcPerNode, "must be greater than or equal to 1"))
	}
	if m := p.MPI; m != nil {
		mpiPath := mlPolicyPath.Child("mpi")
		if m.NumProcPerNode != nil && *m.NumProcPerNode < 1 {
			errs = append(errs, field.Invalid(mpiPath.Child("numProcPerNode"), *m.NumProcPerNode, "must be greater than or equal to 1"))
		}
		if m.SSHAuthMountPath != nil && !path.IsAbs(*m.SSHAuthMountPath) {
			errs = append(errs, field.Invalid(mpiPath.Child("sshAuthMountPath"), *m.SSHAuthMountPath,
				"must be an absolute path (the home .ssh directory of the user the image runs as)"))
		}
	}
	return errs
}

// validateEnvInjectionTargets repeats the CRD's rules for torch
// envInjection targets (Trainer v2.3's), for clusters whose CRD predates
// them: each target lists containers, and not the node container, which
// gets the PET_* variables anyway. Targets naming jobs or containers the
// runtime lacks are the torch plugin's errors.
func validateEnvInjectionTargets(inj *trainer.TorchEnvInjection) field.ErrorList {
	var errs field.ErrorList
	targets := mlPolicyPath.Child("torch", "envInjection", "targets")
	for _, target := range inj.Targets {
		names := targets.Key(target.JobName).Child("containerNames")
		switch {
		case len(target.ContainerNames) == 0:
			errs = append(errs, field.Required(names, "list the containers that get the PET_* variables"))
		case slices.Contains(target.ContainerNames, trainer.TrainerNodeName):
			errs = append(errs, field.Invalid(names, target.ContainerNames,
				"containerNames must not include the main node container because PET_* envs are always injected into it"))
		}
	}
	return errs
}

func unsupportedPolicyWarnings(spec *trainer.TrainingRuntimeSpec) admission.Warnings {
	const tail = "Gantry cannot run it; TrainJobs that reference this runtime are rejected"
	var w admission.Warnings
	if p := spec.MLPolicy; p != nil {
		if p.MPI != nil && p.MPI.MPIImplementation != nil {
			if impl := *p.MPI.MPIImplementation; impl != "" && impl != trainer.MPIImplementationOpenMPI {
				w = append(w, fmt.Sprintf("spec.mlPolicy.mpi.mpiImplementation %s: %s", impl, tail))
			}
		}
	}
	return w
}
