package validation

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/component-base/featuregate"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/features"
)

// The RayJob checks KubeRay v1.7.0 makes (utils.ValidateRayJobMetadata,
// ValidateRayJobSpec, ValidateRayJobStatus), shared by the RayJob
// reconciler and the RayJob admission webhook. The rules and their order are
// KubeRay's, the messages Gantry's: each names the field it is about, and the
// field.Error it carries points at it.

// MaxRayJobNameLength leaves room for the suffix the RayJob's RayCluster
// name gets ("-" and 5 random characters) within MaxRayClusterNameLength.
const MaxRayJobNameLength = MaxRayClusterNameLength - 6

// RayJobValidationOptions carries the operator settings some RayJob rules
// depend on.
type RayJobValidationOptions struct {
	// Cluster are the options of the embedded rayClusterSpec's rules, the
	// RayCluster ones.
	Cluster SpecValidationOptions
	// AllowDeletionStrategy is KubeRay's RayJobDeletionPolicy feature
	// gate: without it spec.deletionStrategy is refused.
	AllowDeletionStrategy bool
}

// RayJobValidationOptionsFromGates derives the options from the process's
// feature gates, as SpecValidationOptionsFromGates does for a RayCluster;
// the RayJob reconciler and the RayJob webhook both use it.
func RayJobValidationOptionsFromGates(gates featuregate.FeatureGate) RayJobValidationOptions {
	if gates == nil {
		return RayJobValidationOptions{}
	}
	return RayJobValidationOptions{
		Cluster:               SpecValidationOptionsFromGates(gates),
		AllowDeletionStrategy: gates.Enabled(features.RayJobDeletionPolicy),
	}
}

// RayJobValidationError is what ValidateRayJob returns: the layer that
// failed and why.
type RayJobValidationError struct {
	Layer ValidationLayer
	Err   error
}

func (e *RayJobValidationError) Error() string { return e.Err.Error() }
func (e *RayJobValidationError) Unwrap() error { return e.Err }

// EventReason is the reason of the Warning event the reconciler emits,
// KubeRay's.
func (e *RayJobValidationError) EventReason() rayv1.EventReason {
	switch e.Layer {
	case ValidationLayerMetadata:
		return rayv1.InvalidRayJobMetadata
	case ValidationLayerStatus:
		return rayv1.InvalidRayJobStatus
	default:
		return rayv1.InvalidRayJobSpec
	}
}

// ValidateRayJob runs metadata, spec and status checks in KubeRay's order
// and returns the first failure, or nil.
func ValidateRayJob(job *rayv1.RayJob, opts RayJobValidationOptions) *RayJobValidationError {
	if err := ValidateRayJobMetadata(job.ObjectMeta); err != nil {
		return &RayJobValidationError{Layer: ValidationLayerMetadata, Err: err}
	}
	if err := ValidateRayJobSpec(job, opts); err != nil {
		return &RayJobValidationError{Layer: ValidationLayerSpec, Err: err}
	}
	if err := ValidateRayJobStatus(job); err != nil {
		return &RayJobValidationError{Layer: ValidationLayerStatus, Err: err}
	}
	return nil
}

// FieldErrors returns every field error in err: one for most rules, several
// for the deletion rules, which are all reported at once. A part of err
// that names no field becomes an Invalid error at fallback.
func FieldErrors(err error, fallback *field.Path) field.ErrorList {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out field.ErrorList
		for _, e := range joined.Unwrap() {
			out = append(out, FieldErrors(e, fallback)...)
		}
		return out
	}
	return field.ErrorList{AsFieldError(err, fallback)}
}

var (
	rayJobClusterSpecPath = specPath.Child("rayClusterSpec")
	deletionStrategyPath  = specPath.Child("deletionStrategy")
)

// ValidateRayJobMetadata checks the RayJob's name, which its RayCluster's
// name and so its Pods' and Services' names are made of.
func ValidateRayJobMetadata(objectMeta metav1.ObjectMeta) error {
	namePath := field.NewPath("metadata", "name")
	if len(objectMeta.Name) > MaxRayJobNameLength {
		return invalidf(namePath, objectMeta.Name, "metadata.name must be no more than %d characters (it has %d): "+
			"the RayCluster the RayJob creates is named after it with a 6-character suffix", MaxRayJobNameLength, len(objectMeta.Name))
	}
	if errs := validation.IsDNS1035Label(objectMeta.Name); len(errs) > 0 {
		return invalidf(namePath, objectMeta.Name, "metadata.name must be a valid DNS-1035 label: %s", strings.Join(errs, "; "))
	}
	return nil
}

// ValidateRayJobStatus rejects a status no correct reconcile produces: only
// InteractiveMode waits for the user to submit the job.
func ValidateRayJobStatus(job *rayv1.RayJob) error {
	if job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusWaiting && job.Spec.SubmissionMode != rayv1.InteractiveMode {
		return invalidf(field.NewPath("status", "jobDeploymentStatus"), string(job.Status.JobDeploymentStatus),
			"status.jobDeploymentStatus may be Waiting only when spec.submissionMode is InteractiveMode, not %q", job.Spec.SubmissionMode)
	}
	return nil
}

// ValidateRayJobManagedBy is the CRD's rule for spec.managedBy, in Go for
// the webhook: one of the two known managers, and, once set, never
// changed to another (oldJob is nil on create). Like the CRD's transition
// rule it lets the field be added or removed. The reconciler does not
// call it: it skips a RayJob another manager owns before validating.
func ValidateRayJobManagedBy(oldJob, job *rayv1.RayJob) error {
	managedBy := job.Spec.ManagedBy
	if managedBy == nil {
		return nil
	}
	path := specPath.Child("managedBy")
	if m := *managedBy; m != rayv1.KubeRayController && m != rayv1.MultiKueueController {
		return &FieldError{Field: field.NotSupported(path, m, []string{rayv1.KubeRayController, rayv1.MultiKueueController})}
	}
	if oldJob != nil && oldJob.Spec.ManagedBy != nil && *oldJob.Spec.ManagedBy != *managedBy {
		return invalidf(path, *managedBy, "spec.managedBy is immutable: it was %q", *oldJob.Spec.ManagedBy)
	}
	return nil
}

// ValidateRayJobSpec checks the rules the API server cannot express in the
// CRD schema, in KubeRay's order (which decides the message a spec with
// several problems gets), the embedded rayClusterSpec with the RayCluster
// rules.
func ValidateRayJobSpec(job *rayv1.RayJob, opts RayJobValidationOptions) error {
	spec := &job.Spec
	// Suspending deletes the cluster, which a RayJob that keeps its
	// cluster after the end has promised not to do.
	if spec.Suspend && !spec.ShutdownAfterJobFinishes {
		return forbiddenf(specPath.Child("suspend"), "spec.suspend requires spec.shutdownAfterJobFinishes: "+
			"a RayJob that keeps its RayCluster after the job ends cannot be suspended")
	}
	if spec.TTLSecondsAfterFinished < 0 {
		return invalidf(specPath.Child("ttlSecondsAfterFinished"), spec.TTLSecondsAfterFinished,
			"spec.ttlSecondsAfterFinished must not be negative")
	}
	if err := validateDeletion(job, opts); err != nil {
		return err
	}
	selectorMode := len(spec.ClusterSelector) != 0
	if spec.Suspend && selectorMode {
		return forbiddenf(specPath.Child("suspend"), "spec.suspend is not supported with spec.clusterSelector: "+
			"the RayJob does not own the RayCluster suspending would delete")
	}
	if spec.RayClusterSpec == nil && !selectorMode {
		return requiredf(rayJobClusterSpecPath, "one of spec.rayClusterSpec and spec.clusterSelector must be set")
	}
	if selectorMode {
		if spec.ClusterSelector[rayv1.RayJobClusterSelectorKey] == "" {
			return requiredf(specPath.Child("clusterSelector").Key(rayv1.RayJobClusterSelectorKey),
				"spec.clusterSelector must name the RayCluster to run on under the key %s", rayv1.RayJobClusterSelectorKey)
		}
		if spec.SubmissionMode == rayv1.SidecarMode {
			return forbiddenf(specPath.Child("submissionMode"), "spec.submissionMode SidecarMode is not supported with spec.clusterSelector: "+
				"the submitter container goes into the head Pod of a RayCluster the RayJob creates")
		}
		if spec.BackoffLimit != nil && *spec.BackoffLimit > 0 {
			return forbiddenf(specPath.Child("backoffLimit"), "spec.backoffLimit must be 0 with spec.clusterSelector: "+
				"each retry runs on a new RayCluster, which the RayJob cannot create")
		}
	}
	// A retry keeps spec.jobId, so an InteractiveMode retry would find the
	// failed job and never wait for a new one.
	if spec.SubmissionMode == rayv1.InteractiveMode && spec.BackoffLimit != nil && *spec.BackoffLimit > 0 {
		return forbiddenf(specPath.Child("backoffLimit"), "spec.backoffLimit must be 0 when spec.submissionMode is InteractiveMode")
	}
	if spec.SubmissionMode == rayv1.SidecarMode {
		if spec.SubmitterPodTemplate != nil {
			return forbiddenf(specPath.Child("submitterPodTemplate"), "spec.submitterPodTemplate is not supported when spec.submissionMode is SidecarMode: "+
				"the submitter is a container of the head Pod")
		}
		if spec.SubmitterConfig != nil {
			return forbiddenf(specPath.Child("submitterConfig"), "spec.submitterConfig is not supported when spec.submissionMode is SidecarMode")
		}
		if spec.RayClusterSpec != nil {
			// The submitter's exit must end the head Pod's run, not restart it.
			if p := spec.RayClusterSpec.HeadGroupSpec.Template.Spec.RestartPolicy; p != "" && p != corev1.RestartPolicyNever {
				return invalidf(rayJobClusterSpecPath.Child("headGroupSpec", "template", "spec", "restartPolicy"), string(p),
					"spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy must be Never or unset when spec.submissionMode is SidecarMode")
			}
		}
	}
	if cs := spec.RayClusterSpec; cs != nil {
		if a := cs.AuthOptions; a != nil && a.EnableK8sTokenAuth != nil && *a.EnableK8sTokenAuth {
			return forbiddenf(rayJobClusterSpecPath.Child("authOptions", "enableK8sTokenAuth"),
				"spec.rayClusterSpec.authOptions.enableK8sTokenAuth is not supported for a RayJob")
		}
		if err := ValidateRayClusterSpec(cs, job.Annotations, opts.Cluster); err != nil {
			return underRayJob(err)
		}
	}
	// Only YAML syntax and shape (a mapping) are checked; what Ray makes of
	// the keys is Ray's business. KubeRay's parser, into a named map type
	// as KubeRay's, so the same texts pass.
	var runtimeEnv runtimeEnvMapping
	if err := k8syaml.Unmarshal([]byte(spec.RuntimeEnvYAML), &runtimeEnv); err != nil {
		return invalidf(specPath.Child("runtimeEnvYAML"), field.OmitValueType{}, "spec.runtimeEnvYAML must be a YAML mapping: %v", err)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		return invalidf(specPath.Child("activeDeadlineSeconds"), *d, "spec.activeDeadlineSeconds must be a positive number of seconds")
	}
	if d := spec.PreRunningDeadlineSeconds; d != nil && *d <= 0 {
		return invalidf(specPath.Child("preRunningDeadlineSeconds"), *d, "spec.preRunningDeadlineSeconds must be a positive number of seconds")
	}
	if b := spec.BackoffLimit; b != nil && *b < 0 {
		return invalidf(specPath.Child("backoffLimit"), *b, "spec.backoffLimit must not be negative")
	}
	return nil
}

// runtimeEnvMapping is what spec.runtimeEnvYAML must hold.
type runtimeEnvMapping map[string]any

// underRayJob moves a RayCluster spec error under spec.rayClusterSpec, in
// its path and its message. Annotation paths stay: they are the RayJob's,
// which its cluster inherits.
func underRayJob(err error) error {
	fe := AsFieldError(err, rayJobClusterSpecPath)
	moved := *fe
	if rest, ok := strings.CutPrefix(fe.Field, specPath.String()+"."); ok {
		moved.Field = rayJobClusterSpecPath.String() + "." + rest
	}
	moved.Detail = "spec.rayClusterSpec: " + fe.Detail
	return &FieldError{Field: &moved}
}

func autoscaling(spec *rayv1.RayClusterSpec) bool {
	return spec != nil && spec.AutoscalingEnabled()
}

// validateDeletion checks shutdownAfterJobFinishes, its TTL and
// deletionStrategy together.
func validateDeletion(job *rayv1.RayJob, opts RayJobValidationOptions) error {
	spec := &job.Spec
	if !spec.ShutdownAfterJobFinishes && spec.TTLSecondsAfterFinished > 0 {
		return forbiddenf(specPath.Child("ttlSecondsAfterFinished"),
			"spec.ttlSecondsAfterFinished applies only with spec.shutdownAfterJobFinishes: true")
	}
	strategy := spec.DeletionStrategy
	if strategy == nil {
		return nil
	}
	if !opts.AllowDeletionStrategy {
		return forbiddenf(deletionStrategyPath, "spec.deletionStrategy requires the RayJobDeletionPolicy feature gate")
	}
	legacy := strategy.OnSuccess != nil || strategy.OnFailure != nil
	rules := len(strategy.DeletionRules) > 0
	rulesPath := deletionStrategyPath.Child("deletionRules")
	switch {
	case rules && spec.ShutdownAfterJobFinishes:
		return forbiddenf(rulesPath, "spec.deletionStrategy.deletionRules and spec.shutdownAfterJobFinishes are mutually exclusive")
	case rules && legacy:
		return forbiddenf(rulesPath, "spec.deletionStrategy.deletionRules cannot be combined with spec.deletionStrategy.onSuccess and onFailure")
	case legacy:
		return validateLegacyDeletion(job)
	case rules:
		return validateDeletionRules(job)
	default:
		return requiredf(deletionStrategyPath, "spec.deletionStrategy must set both onSuccess and onFailure, or deletionRules")
	}
}

// validateLegacyDeletion checks the deprecated onSuccess/onFailure pair.
func validateLegacyDeletion(job *rayv1.RayJob) error {
	strategy := job.Spec.DeletionStrategy
	if strategy.OnSuccess == nil {
		return requiredf(deletionStrategyPath.Child("onSuccess"), "spec.deletionStrategy.onSuccess must be set together with onFailure")
	}
	if strategy.OnFailure == nil {
		return requiredf(deletionStrategyPath.Child("onFailure"), "spec.deletionStrategy.onFailure must be set together with onSuccess")
	}
	legs := []struct {
		name   string
		policy *rayv1.DeletionPolicyType
	}{{"onSuccess", strategy.OnSuccess.Policy}, {"onFailure", strategy.OnFailure.Policy}}
	for _, leg := range legs {
		if leg.policy == nil {
			return requiredf(deletionStrategyPath.Child(leg.name, "policy"), "spec.deletionStrategy.%s.policy must be set", leg.name)
		}
	}
	if len(job.Spec.ClusterSelector) != 0 {
		for _, leg := range legs {
			if p := *leg.policy; p == rayv1.DeleteCluster || p == rayv1.DeleteWorkers {
				return forbiddenf(deletionStrategyPath.Child(leg.name, "policy"),
					"spec.deletionStrategy.%s.policy %s is not supported with spec.clusterSelector: the RayJob does not own that RayCluster", leg.name, p)
			}
		}
	}
	if autoscaling(job.Spec.RayClusterSpec) {
		for _, leg := range legs {
			if *leg.policy == rayv1.DeleteWorkers {
				return forbiddenf(deletionStrategyPath.Child(leg.name, "policy"),
					"spec.deletionStrategy.%s.policy DeleteWorkers is not supported when spec.rayClusterSpec.enableInTreeAutoscaling is true", leg.name)
			}
		}
	}
	if job.Spec.ShutdownAfterJobFinishes {
		for _, leg := range legs {
			if *leg.policy == rayv1.DeleteNone {
				return forbiddenf(deletionStrategyPath.Child(leg.name, "policy"),
					"spec.deletionStrategy.%s.policy DeleteNone contradicts spec.shutdownAfterJobFinishes: true", leg.name)
			}
		}
	}
	return nil
}

// deletionOrder is the order rules for one status must run in (a lower TTL
// runs first): workers, then the cluster, then the RayJob itself.
var deletionOrder = []rayv1.DeletionPolicyType{rayv1.DeleteWorkers, rayv1.DeleteCluster, rayv1.DeleteSelf}

// deletionTrigger is what a rule waits for: a job status or a deployment
// status (exactly one is set).
type deletionTrigger struct {
	kind, value string
}

func (t deletionTrigger) String() string { return t.kind + " " + t.value }

// validateDeletionRules checks every rule and reports every problem: each
// rule alone, no two rules with the same policy and trigger, and, per
// trigger, TTLs that follow deletionOrder.
func validateDeletionRules(job *rayv1.RayJob) error {
	rulesPath := deletionStrategyPath.Child("deletionRules")
	selectorMode := len(job.Spec.ClusterSelector) != 0
	autoscaled := autoscaling(job.Spec.RayClusterSpec)

	type seenRule struct {
		index int
		ttl   int32
	}
	var triggers []deletionTrigger // in the order first seen, for stable messages
	byTrigger := map[deletionTrigger]map[rayv1.DeletionPolicyType]seenRule{}
	var errs []error
	for i, rule := range job.Spec.DeletionStrategy.DeletionRules {
		path := rulesPath.Index(i)
		cond := rule.Condition
		condPath := path.Child("condition")
		switch {
		case cond.JobStatus != nil && cond.JobDeploymentStatus != nil:
			errs = append(errs, forbiddenf(condPath, "spec.deletionStrategy.deletionRules[%d].condition must set only one of jobStatus and jobDeploymentStatus", i))
			continue
		case cond.JobStatus == nil && cond.JobDeploymentStatus == nil:
			errs = append(errs, requiredf(condPath, "spec.deletionStrategy.deletionRules[%d].condition must set one of jobStatus and jobDeploymentStatus", i))
			continue
		case cond.TTLSeconds < 0:
			errs = append(errs, invalidf(condPath.Child("ttlSeconds"), cond.TTLSeconds, "spec.deletionStrategy.deletionRules[%d].condition.ttlSeconds must not be negative", i))
			continue
		}
		if selectorMode && (rule.Policy == rayv1.DeleteCluster || rule.Policy == rayv1.DeleteWorkers) {
			errs = append(errs, forbiddenf(path.Child("policy"),
				"spec.deletionStrategy.deletionRules[%d].policy %s is not supported with spec.clusterSelector: the RayJob does not own that RayCluster", i, rule.Policy))
			continue
		}
		if autoscaled && rule.Policy == rayv1.DeleteWorkers {
			errs = append(errs, forbiddenf(path.Child("policy"),
				"spec.deletionStrategy.deletionRules[%d].policy DeleteWorkers is not supported when spec.rayClusterSpec.enableInTreeAutoscaling is true", i))
			continue
		}
		trigger := deletionTrigger{kind: "jobStatus"}
		if cond.JobStatus != nil {
			trigger.value = string(*cond.JobStatus)
		} else {
			trigger.kind, trigger.value = "jobDeploymentStatus", string(*cond.JobDeploymentStatus)
		}
		policies, known := byTrigger[trigger]
		if !known {
			policies = map[rayv1.DeletionPolicyType]seenRule{}
			byTrigger[trigger] = policies
			triggers = append(triggers, trigger)
		}
		if first, dup := policies[rule.Policy]; dup {
			dupErr := field.Duplicate(path, rule.Policy)
			dupErr.Detail = fmt.Sprintf("spec.deletionStrategy.deletionRules[%d] repeats deletionRules[%d]: policy %s on %s", i, first.index, rule.Policy, trigger)
			errs = append(errs, &FieldError{Field: dupErr})
			continue
		}
		policies[rule.Policy] = seenRule{index: i, ttl: cond.TTLSeconds}
	}
	for _, trigger := range triggers {
		policies := byTrigger[trigger]
		var prev *seenRule
		var prevPolicy rayv1.DeletionPolicyType
		for _, policy := range deletionOrder {
			r, ok := policies[policy]
			if !ok {
				continue
			}
			if prev != nil && r.ttl < prev.ttl {
				errs = append(errs, invalidf(rulesPath.Index(r.index).Child("condition", "ttlSeconds"), r.ttl,
					"spec.deletionStrategy.deletionRules[%d].condition.ttlSeconds (%d, %s on %s) must be at least that of deletionRules[%d] (%d, %s): "+
						"workers are deleted first, then the cluster, then the RayJob",
					r.index, r.ttl, policy, trigger, prev.index, prev.ttl, prevPolicy))
			}
			prev, prevPolicy = &r, policy
		}
	}
	return errors.Join(errs...)
}
