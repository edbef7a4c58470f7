package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/torch"
)

// +kubebuilder:webhook:path=/mutate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=mtrainjob.trainer.kubeflow.org,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=vtrainjob.trainer.kubeflow.org,admissionReviewVersions=v1

var (
	trainJobGK         = trainer.GroupVersion.WithKind(trainer.TrainJobKind).GroupKind()
	runtimeRefPath     = field.NewPath("spec", "runtimeRef")
	runtimePatchesPath = field.NewPath("spec", "runtimePatches")
	trainerPath        = field.NewPath("spec", "trainer")
)

func setupTrainer(mgr ctrl.Manager, opts Options) error {
	// The runtime framework only reads through Existing when it builds
	// objects; validation reads nothing.
	rt, err := runtime.New(runtime.Options{Existing: opts.Reader, ElasticPyTorch: elasticPyTorch(opts.Features)})
	if err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &trainer.TrainJob{}).
		WithDefaulter(&TrainJobDefaulter{Clock: opts.Clock}).
		WithValidator(&TrainJobValidator{Runtime: rt, Reader: opts.Reader}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &trainer.TrainingRuntime{}).
		WithValidator(&TrainingRuntimeValidator{Runtime: rt}).
		Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &trainer.ClusterTrainingRuntime{}).
		WithValidator(&ClusterTrainingRuntimeValidator{Runtime: rt}).
		Complete()
}

// TrainJobDefaulter does what Trainer v2.3's defaulter does: it stamps each
// runtime patch with the time its manager last changed it. It also fills
// runtimeRef's apiGroup and kind with the CRD's defaults, which the API
// server has normally applied already.
type TrainJobDefaulter struct {
	Clock clock.PassiveClock
}

var _ admission.Defaulter[*trainer.TrainJob] = (*TrainJobDefaulter)(nil)

// Default implements admission.Defaulter.
func (d *TrainJobDefaulter) Default(ctx context.Context, job *trainer.TrainJob) error {
	ref := &job.Spec.RuntimeRef
	if ref.APIGroup == nil {
		ref.APIGroup = ptr.To(trainer.GroupVersion.Group)
	}
	if ref.Kind == nil {
		ref.Kind = ptr.To(trainer.ClusterTrainingRuntimeKind)
	}
	var old *trainer.TrainJob
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		old = &trainer.TrainJob{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("decoding the old TrainJob: %v", err))
		}
	}
	stampRuntimePatches(old, job, metav1.NewTime(d.Clock.Now()))
	return nil
}

// stampRuntimePatches sets time on new entries and on entries whose content
// changed, and keeps the old time on unchanged ones, so the time says when
// the manager last wrote its patch.
func stampRuntimePatches(old, job *trainer.TrainJob, now metav1.Time) {
	previous := map[string]trainer.RuntimePatch{}
	if old != nil {
		for _, p := range old.Spec.RuntimePatches {
			previous[p.Manager] = p
		}
	}
	for i := range job.Spec.RuntimePatches {
		patch := &job.Spec.RuntimePatches[i]
		prev, existed := previous[patch.Manager]
		switch {
		case !existed:
			if patch.Time == nil {
				patch.Time = now.DeepCopy()
			}
		case samePatchContent(prev, *patch):
			patch.Time = prev.Time.DeepCopy()
		default:
			patch.Time = now.DeepCopy()
		}
	}
}

func samePatchContent(a, b trainer.RuntimePatch) bool {
	a.Time, b.Time = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// TrainJobValidator checks a TrainJob against the runtime it references,
// with the runtime framework's validation (the checks the controller runs
// before it builds anything), plus the update rules of Trainer v2.3.
type TrainJobValidator struct {
	Runtime *runtime.Runtime
	// Reader reads the referenced runtime and the job's JobSet.
	Reader client.Reader
}

var _ admission.Validator[*trainer.TrainJob] = (*TrainJobValidator)(nil)

// ValidateCreate implements admission.Validator.
func (v *TrainJobValidator) ValidateCreate(ctx context.Context, job *trainer.TrainJob) (admission.Warnings, error) {
	return v.validate(ctx, nil, job)
}

// ValidateUpdate implements admission.Validator.
func (v *TrainJobValidator) ValidateUpdate(ctx context.Context, oldJob, newJob *trainer.TrainJob) (admission.Warnings, error) {
	if beingDeleted(newJob) {
		return nil, nil
	}
	return v.validate(ctx, oldJob, newJob)
}

// ValidateDelete implements admission.Validator.
func (v *TrainJobValidator) ValidateDelete(context.Context, *trainer.TrainJob) (admission.Warnings, error) {
	return nil, nil
}

// validate returns the job's errors and, as Trainer v2.3 does on create
// and update, the warnings of the runtime it references (given with the
// errors too).
func (v *TrainJobValidator) validate(ctx context.Context, oldJob, newJob *trainer.TrainJob) (admission.Warnings, error) {
	errs := runtime.ValidateTrainJob(newJob)
	if oldJob != nil {
		errs = append(errs, validateTrainJobUpdate(oldJob, newJob)...)
		patchErrs, err := v.validateRuntimePatchesUpdate(ctx, oldJob, newJob)
		if err != nil {
			return nil, err
		}
		errs = append(errs, patchErrs...)
	}
	warnings, runtimeErrs, err := v.validateAgainstRuntime(ctx, oldJob, newJob)
	if err != nil {
		return warnings, err
	}
	errs = append(errs, runtimeErrs...)
	return warnings, invalid(trainJobGK, newJob.Name, errs)
}

// validateTrainJobUpdate repeats the CRD's immutability rules, so they hold
// on clusters whose CRD predates them. spec.trainer.numNodes is left to the
// runtime's validation, which lets it change for elastic jobs only.
func validateTrainJobUpdate(oldJob, newJob *trainer.TrainJob) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	errs = append(errs, apivalidation.ValidateImmutableField(newJob.Spec.RuntimeRef, oldJob.Spec.RuntimeRef, runtimeRefPath)...)
	errs = append(errs, apivalidation.ValidateImmutableField(newJob.Spec.Initializer, oldJob.Spec.Initializer, spec.Child("initializer"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(withoutNumNodes(newJob.Spec.Trainer), withoutNumNodes(oldJob.Spec.Trainer), trainerPath)...)
	return errs
}

// withoutNumNodes is a copy of t without numNodes (nil stays nil).
func withoutNumNodes(t *trainer.Trainer) *trainer.Trainer {
	if t == nil {
		return nil
	}
	c := t.DeepCopy()
	c.NumNodes = nil
	return c
}

// elasticPyTorch reads the TrainJobElasticPyTorch gate; a gate set that
// does not know it (no TrainJob workload) reads as off.
func elasticPyTorch(gates featuregate.FeatureGate) bool {
	if gates == nil {
		return false
	}
	if _, known := gates.DeepCopy().GetAll()[featuregate.Feature(torch.ElasticGateName)]; !known {
		return false
	}
	return gates.Enabled(featuregate.Feature(torch.ElasticGateName))
}

// validateRuntimePatchesUpdate is Trainer v2.3's rule: runtime patches may
// change only when the job is suspended before or after the update (Kueue
// rewrites them while it suspends or admits a job in one request), and not
// while the JobSet still has active Jobs, whose pods would not match.
func (v *TrainJobValidator) validateRuntimePatchesUpdate(ctx context.Context, oldJob, newJob *trainer.TrainJob) (field.ErrorList, error) {
	if equality.Semantic.DeepEqual(oldJob.Spec.RuntimePatches, newJob.Spec.RuntimePatches) {
		return nil, nil
	}
	if !ptr.Deref(oldJob.Spec.Suspend, false) && !ptr.Deref(newJob.Spec.Suspend, false) {
		return field.ErrorList{field.Forbidden(runtimePatchesPath,
			"RuntimePatches can only be modified when the TrainJob is suspended before or after the update")}, nil
	}
	jobSet := &jobsetv1alpha2.JobSet{}
	if err := v.Reader.Get(ctx, client.ObjectKeyFromObject(newJob), jobSet); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the TrainJob's JobSet: %w", err))
	}
	var errs field.ErrorList
	for _, rj := range jobSet.Status.ReplicatedJobsStatus {
		if rj.Active > 0 {
			errs = append(errs, field.Forbidden(runtimePatchesPath,
				fmt.Sprintf("RuntimePatches cannot be modified when the JobSet's ReplicatedJob %s is still active", rj.Name)))
		}
	}
	return errs, nil
}

// validateAgainstRuntime resolves the runtime and runs the framework's
// validation, plus Trainer v2.3's initializer volume check (which the
// controller does not repeat: as under Trainer, a job built without the
// mount runs, its download unseen by the trainer). A runtime that vanished
// after the job was created does not block updates (suspending, labelling,
// removing finalizers); the controller already reports the job as failed.
// The warnings are the runtime's (deprecatedRuntimeWarnings).
func (v *TrainJobValidator) validateAgainstRuntime(ctx context.Context, oldJob, newJob *trainer.TrainJob) (admission.Warnings, field.ErrorList, error) {
	spec, warnings, err := v.resolveRuntime(ctx, newJob)
	switch {
	case err == nil:
		return warnings, v.Runtime.Validate(oldJob, newJob, spec), nil
	case runtime.IsRuntimeNotFound(err):
		if oldJob != nil {
			return nil, nil, nil
		}
		kind := ptr.Deref(newJob.Spec.RuntimeRef.Kind, trainer.ClusterTrainingRuntimeKind)
		nf := field.NotFound(runtimeRefPath, newJob.Spec.RuntimeRef.Name)
		nf.Detail = fmt.Sprintf("specified %s must be created before the TrainJob is created", kind)
		return nil, field.ErrorList{nf}, nil
	case errors.Is(err, runtime.ErrUnsupportedRuntimeKind):
		return nil, unsupportedRuntimeRef(newJob.Spec.RuntimeRef), nil
	default:
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("reading the TrainJob's runtime: %w", err))
	}
}

// resolveRuntime is runtime.ResolveSpec with the warnings of the runtime
// (deprecatedRuntimeWarnings), read in the same one request.
func (v *TrainJobValidator) resolveRuntime(ctx context.Context, job *trainer.TrainJob) (*trainer.TrainingRuntimeSpec, admission.Warnings, error) {
	spec, obj, err := runtime.ResolveRuntime(ctx, v.Reader, job)
	if ctr, ok := obj.(*trainer.ClusterTrainingRuntime); ok {
		return spec, deprecatedRuntimeWarnings(ctr), err
	}
	return spec, nil, err
}

// deprecatedRuntimeWarnings is Trainer v2.3's admission warning for a
// TrainJob that references a ClusterTrainingRuntime labelled
// trainer.kubeflow.org/support: deprecated
// (pkg/runtime/core/clustertrainingruntime.go, ValidateObjects), on create
// and update alike. Trainer gives none for a TrainingRuntime so labelled.
func deprecatedRuntimeWarnings(ctr *trainer.ClusterTrainingRuntime) admission.Warnings {
	if ctr.Labels[labelSupport] != supportDeprecated {
		return nil
	}
	return admission.Warnings{fmt.Sprintf(
		"Referenced ClusterTrainingRuntime \"%s\" is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: %s",
		ctr.Name, runtimeDeprecationPolicyURL)}
}

func unsupportedRuntimeRef(ref trainer.RuntimeRef) field.ErrorList {
	if group := ptr.Deref(ref.APIGroup, trainer.GroupVersion.Group); group != trainer.GroupVersion.Group {
		return field.ErrorList{field.NotSupported(runtimeRefPath.Child("apiGroup"), group, []string{trainer.GroupVersion.Group})}
	}
	return field.ErrorList{field.NotSupported(runtimeRefPath.Child("kind"), ptr.Deref(ref.Kind, ""),
		[]string{trainer.ClusterTrainingRuntimeKind, trainer.TrainingRuntimeKind})}
}
