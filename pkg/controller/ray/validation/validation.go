package validation

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/features"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
)

// MaxRayClusterNameLength keeps every generated Service name within the
// 63-character DNS label limit: "-serve-svc" is the longest suffix Gantry
// appends, and 63 - 10 = 53.
const MaxRayClusterNameLength = 53

// ValidationLayer names which of the four checks rejected a cluster; they run
// in this order and the first failure wins.
type ValidationLayer string

const (
	ValidationLayerMetadata       ValidationLayer = "Metadata"
	ValidationLayerSpec           ValidationLayer = "Spec"
	ValidationLayerUpgradeOptions ValidationLayer = "UpgradeOptions"
	ValidationLayerStatus         ValidationLayer = "Status"
)

// ValidationError is what Validate returns: the layer that failed and why.
type ValidationError struct {
	Layer ValidationLayer
	Err   error
}

func (e *ValidationError) Error() string { return e.Err.Error() }
func (e *ValidationError) Unwrap() error { return e.Err }

// EventReason is the reason of the Warning event the reconciler emits. The
// values are KubeRay's, so alerts keyed on them keep working; KubeRay reports
// bad upgrade options as a bad spec.
func (e *ValidationError) EventReason() rayv1.EventReason {
	switch e.Layer {
	case ValidationLayerMetadata:
		return rayv1.InvalidRayClusterMetadata
	case ValidationLayerStatus:
		return rayv1.InvalidRayClusterStatus
	default:
		return rayv1.InvalidRayClusterSpec
	}
}

// EventMessage is the Warning event's message, in KubeRay's wording.
func (e *ValidationError) EventMessage(namespace, name string) string {
	switch e.Layer {
	case ValidationLayerMetadata:
		return fmt.Sprintf("The RayCluster metadata is invalid %s/%s: %v", namespace, name, e.Err)
	case ValidationLayerStatus:
		return fmt.Sprintf("The RayCluster status is invalid %s/%s, %v", namespace, name, e.Err)
	default:
		return fmt.Sprintf("The RayCluster spec is invalid %s/%s: %v", namespace, name, e.Err)
	}
}

// Transient reports whether the reconciler should return the error and
// requeue after InvalidStatusRequeueDelay. Metadata, spec and upgrade-option
// failures are user errors: retrying cannot fix them, the user's next edit
// triggers a reconcile anyway, so they end the reconcile without requeue.
func (e *ValidationError) Transient() bool {
	return e.Layer == ValidationLayerStatus
}

// FieldError is what the validation functions below return: the offending
// field for admission (pkg/webhook turns it into a field.ErrorList entry)
// and, as Error(), KubeRay's message, which the reconciler's events keep.
type FieldError struct {
	Field *field.Error
}

func (e *FieldError) Error() string { return e.Field.Detail }

// AsFieldError returns err's field error, or an Invalid error at fallback
// carrying err's message when err names no field.
func AsFieldError(err error, fallback *field.Path) *field.Error {
	if fe, ok := errors.AsType[*FieldError](err); ok {
		return fe.Field
	}
	return field.Invalid(fallback, field.OmitValueType{}, err.Error())
}

func invalidf(path *field.Path, value any, format string, args ...any) error {
	return &FieldError{Field: field.Invalid(path, value, fmt.Sprintf(format, args...))}
}

func forbiddenf(path *field.Path, format string, args ...any) error {
	return &FieldError{Field: field.Forbidden(path, fmt.Sprintf(format, args...))}
}

func requiredf(path *field.Path, format string, args ...any) error {
	return &FieldError{Field: field.Required(path, fmt.Sprintf(format, args...))}
}

var (
	specPath        = field.NewPath("spec")
	headGroupPath   = specPath.Child("headGroupSpec")
	workerGroupPath = specPath.Child("workerGroupSpecs")
	annotationsPath = field.NewPath("metadata", "annotations")
)

// SpecValidationOptions carries the operator settings some spec rules
// depend on.
type SpecValidationOptions struct {
	// AllowWorkerGroupSuspend mirrors KubeRay's RayJobDeletionPolicy feature
	// gate: per-group suspend exists for RayJob's deletion policy and is
	// rejected on a RayCluster unless the gate is on.
	AllowWorkerGroupSuspend bool
}

// SpecValidationOptionsFromGates derives the options from the process's
// feature gates (with the raycluster gates registered, see Integration). The
// reconciler's setup and the admission webhook both use it, so a spec the
// webhook admits is one the reconciler accepts.
func SpecValidationOptionsFromGates(gates featuregate.FeatureGate) SpecValidationOptions {
	if gates == nil {
		return SpecValidationOptions{}
	}
	return SpecValidationOptions{AllowWorkerGroupSuspend: gates.Enabled(features.RayJobDeletionPolicy)}
}

// Validate runs the four layers in KubeRay's order and returns the first
// failure, or nil.
func Validate(cluster *rayv1.RayCluster, opts SpecValidationOptions) *ValidationError {
	if err := ValidateRayClusterMetadata(cluster.ObjectMeta); err != nil {
		return &ValidationError{Layer: ValidationLayerMetadata, Err: err}
	}
	if err := ValidateRayClusterSpec(&cluster.Spec, cluster.Annotations, opts); err != nil {
		return &ValidationError{Layer: ValidationLayerSpec, Err: err}
	}
	if err := ValidateRayClusterUpgradeOptions(cluster); err != nil {
		return &ValidationError{Layer: ValidationLayerUpgradeOptions, Err: err}
	}
	if err := ValidateRayClusterStatus(&cluster.Status); err != nil {
		return &ValidationError{Layer: ValidationLayerStatus, Err: err}
	}
	return nil
}

// ValidateRayClusterMetadata checks the cluster name, which is embedded in
// the names of its Pods and Services.
func ValidateRayClusterMetadata(objectMeta metav1.ObjectMeta) error {
	namePath := field.NewPath("metadata", "name")
	if len(objectMeta.Name) > MaxRayClusterNameLength {
		return invalidf(namePath, objectMeta.Name, "RayCluster name should be no more than %d characters", MaxRayClusterNameLength)
	}
	if errs := validation.IsDNS1035Label(objectMeta.Name); len(errs) > 0 {
		return invalidf(namePath, objectMeta.Name, "RayCluster name should be a valid DNS1035 label: %v", errs)
	}
	return nil
}

// ValidateRayClusterUpgradeOptions rejects unknown strategies and any
// strategy on a cluster owned by a RayJob or RayService, whose owners replace
// clusters themselves.
func ValidateRayClusterUpgradeOptions(cluster *rayv1.RayCluster) error {
	strategy := cluster.Spec.UpgradeStrategy
	if strategy == nil || strategy.Type == nil {
		return nil
	}
	typePath := specPath.Child("upgradeStrategy", "type")
	if t := *strategy.Type; t != rayv1.RayClusterRecreate && t != rayv1.RayClusterUpgradeNone {
		return invalidf(typePath, string(t), "The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value %s is invalid, valid options are %s or %s",
			t, rayv1.RayClusterRecreate, rayv1.RayClusterUpgradeNone)
	}
	switch creator := cluster.Labels[rayv1.RayOriginatedFromCRDLabelKey]; creator {
	case "RayJob", "RayService":
		return forbiddenf(typePath, "upgradeStrategy cannot be set when RayCluster is created by %s", creator)
	}
	return nil
}

// ValidateRayClusterStatus rejects a status no correct reconcile produces:
// the suspend state machine is Suspending then Suspended, never both.
func ValidateRayClusterStatus(status *rayv1.RayClusterStatus) error {
	suspending := meta.IsStatusConditionTrue(status.Conditions, string(rayv1.RayClusterSuspending))
	suspended := meta.IsStatusConditionTrue(status.Conditions, string(rayv1.RayClusterSuspended))
	if suspending && suspended {
		return invalidf(field.NewPath("status", "conditions"), field.OmitValueType{},
			"invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true")
	}
	return nil
}

// ValidateRayClusterSpec checks the rules the API server cannot express in
// the CRD schema. The rules and messages follow KubeRay; the order decides
// which message a spec with several problems gets.
func ValidateRayClusterSpec(spec *rayv1.RayClusterSpec, annotations map[string]string, opts SpecValidationOptions) error {
	if len(spec.HeadGroupSpec.Template.Spec.Containers) == 0 {
		return requiredf(headGroupPath.Child("template", "spec", "containers"), "headGroupSpec should have at least one container")
	}
	if err := validateGroupResources(headGroupPath, "Head", spec.HeadGroupSpec.RayStartParams, spec.HeadGroupSpec.Resources); err != nil {
		return err
	}
	if err := validateGroupLabels(headGroupPath, "Head", spec.HeadGroupSpec.RayStartParams, spec.HeadGroupSpec.Labels); err != nil {
		return err
	}
	if err := validateWorkerGroups(spec); err != nil {
		return err
	}
	if err := validateGCSFaultTolerance(spec, annotations); err != nil {
		return err
	}
	if err := validateWorkerGroupSuspend(spec, opts); err != nil {
		return err
	}
	if err := validateAutoscaler(spec); err != nil {
		return err
	}
	if err := validateHistoryServer(spec); err != nil {
		return err
	}
	if err := validateAuth(spec); err != nil {
		return err
	}
	return validateUnimplementedV17(spec)
}

func validateWorkerGroups(spec *rayv1.RayClusterSpec) error {
	seen := make(map[string]struct{}, len(spec.WorkerGroupSpecs))
	for i := range spec.WorkerGroupSpecs {
		group := &spec.WorkerGroupSpecs[i]
		path := workerGroupPath.Index(i)
		if len(group.Template.Spec.Containers) == 0 {
			return requiredf(path.Child("template", "spec", "containers"), "workerGroupSpec should have at least one container")
		}
		// Group names become Pod name parts and the autoscaler's node types;
		// two groups with one name would scale each other's Pods.
		if _, dup := seen[group.GroupName]; dup {
			dupErr := field.Duplicate(path.Child("groupName"), group.GroupName)
			dupErr.Detail = fmt.Sprintf("worker group names must be unique: %q is used more than once", group.GroupName)
			return &FieldError{Field: dupErr}
		}
		seen[group.GroupName] = struct{}{}
		if group.MinReplicas != nil && *group.MinReplicas < 0 {
			return invalidf(path.Child("minReplicas"), *group.MinReplicas, "worker group %s has negative minReplicas %d", group.GroupName, *group.MinReplicas)
		}
		if group.MaxReplicas != nil && *group.MaxReplicas < 0 {
			return invalidf(path.Child("maxReplicas"), *group.MaxReplicas, "worker group %s has negative maxReplicas %d", group.GroupName, *group.MaxReplicas)
		}
		if group.MinReplicas != nil && group.MaxReplicas != nil && *group.MinReplicas > *group.MaxReplicas {
			return invalidf(path.Child("minReplicas"), *group.MinReplicas, "worker group %s has minReplicas %d greater than maxReplicas %d",
				group.GroupName, *group.MinReplicas, *group.MaxReplicas)
		}
		if err := validateGroupResources(path, group.GroupName, group.RayStartParams, group.Resources); err != nil {
			return err
		}
		if err := validateGroupLabels(path, group.GroupName, group.RayStartParams, group.Labels); err != nil {
			return err
		}
		if err := validateGroupIdleTimeout(path, group, spec); err != nil {
			return err
		}
		if err := validateGroupPriority(path, group, spec); err != nil {
			return err
		}
	}
	return nil
}

// validateGroupResources rejects two sources for the same Ray resources:
// which one wins would be an accident of the generated command line.
func validateGroupResources(path *field.Path, groupName string, rayStartParams, resources map[string]string) error {
	inParams := rayStartParams["num-cpus"] != "" || rayStartParams["num-gpus"] != "" ||
		rayStartParams["memory"] != "" || rayStartParams["resources"] != ""
	if inParams && len(resources) > 0 {
		return forbiddenf(path.Child("resources"), "resource fields should not be set in both rayStartParams and Resources for %s group; please use only one", groupName)
	}
	return nil
}

// validateGroupLabels checks the labels field, which is copied onto Pods and
// so must be valid Kubernetes label syntax. Keys are checked in sorted order
// so the message is the same on every reconcile.
func validateGroupLabels(path *field.Path, groupName string, rayStartParams, labels map[string]string) error {
	if _, ok := rayStartParams["labels"]; ok {
		return forbiddenf(path.Child("rayStartParams").Key("labels"), "rayStartParams['labels'] is not supported for %s group; please use the top-level Labels field instead", groupName)
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var problems []string
	var firstBad string
	for _, key := range keys {
		before := len(problems)
		for _, msg := range validation.IsQualifiedName(key) {
			problems = append(problems, fmt.Sprintf("invalid label key for %s group: '%s', error: %s", groupName, key, msg))
		}
		val := labels[key]
		for _, msg := range validation.IsValidLabelValue(val) {
			problems = append(problems, fmt.Sprintf("invalid label value for key '%s' in %s group: '%s', error: %s", key, groupName, val, msg))
		}
		if firstBad == "" && len(problems) > before {
			firstBad = key
		}
	}
	if len(problems) > 0 {
		return invalidf(path.Child("labels").Key(firstBad), labels[firstBad], "%s", strings.Join(problems, "; "))
	}
	return nil
}

func validateGroupIdleTimeout(path *field.Path, group *rayv1.WorkerGroupSpec, spec *rayv1.RayClusterSpec) error {
	if group.IdleTimeoutSeconds == nil {
		return nil
	}
	path = path.Child("idleTimeoutSeconds")
	if *group.IdleTimeoutSeconds < 0 {
		return invalidf(path, *group.IdleTimeoutSeconds, "worker group %s: idleTimeoutSeconds must be non-negative, got %d", group.GroupName, *group.IdleTimeoutSeconds)
	}
	// Only autoscaler v2 reads a per-group idle timeout; under v1 it would
	// be silently ignored.
	if autoscalerV2On(spec) {
		return nil
	}
	return invalidf(path, *group.IdleTimeoutSeconds, "worker group %s: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. "+
		"Please set .spec.autoscalerOptions.version to 'v2' (or set %s environment variable to 'true' in the head pod if using KubeRay < 1.4.0)",
		group.GroupName, envEnableAutoscalerV2)
}

var minRayVersionForGroupPriority = version.MustParseGeneric("2.56.0")

// validateGroupPriority admits a worker group priority only where the
// autoscaler that reads it runs: autoscaler v2 of Ray 2.56 or later. A
// priority of 0 (the CRD's default) is no priority.
func validateGroupPriority(path *field.Path, group *rayv1.WorkerGroupSpec, spec *rayv1.RayClusterSpec) error {
	if group.Priority == nil || *group.Priority == 0 {
		return nil
	}
	path = path.Child("priority")
	versionPath := specPath.Child("rayVersion")
	if spec.RayVersion == "" {
		return requiredf(versionPath, "worker group %s: priority is set, but RayVersion was not specified. Ray version 2.56.0 or later is required", group.GroupName)
	}
	rayVersion, err := version.ParseGeneric(spec.RayVersion)
	if err != nil {
		return invalidf(versionPath, spec.RayVersion, "worker group %s: priority is set, but RayVersion format is invalid: %s, %v", group.GroupName, spec.RayVersion, err)
	}
	if rayVersion.LessThan(minRayVersionForGroupPriority) {
		return invalidf(versionPath, spec.RayVersion, "worker group %s: priority is set, but minimum Ray version is 2.56.0, got %s", group.GroupName, spec.RayVersion)
	}
	if autoscalerV2On(spec) {
		return nil
	}
	return invalidf(path, *group.Priority, "worker group %s: priority is set to %d, but autoscaler v2 is not enabled. Priority is only supported with autoscaler v2 enabled",
		group.GroupName, *group.Priority)
}

// autoscalerV2On is KubeRay's test for the per-group autoscaler v2 fields:
// autoscalerOptions.version v2, or the head's RAY_enable_autoscaler_v2.
func autoscalerV2On(spec *rayv1.RayClusterSpec) bool {
	if podspec.AutoscalerV2(spec) {
		return true
	}
	env, _, ok := headEnv(spec, envEnableAutoscalerV2)
	return ok && (env.Value == "1" || env.Value == "true")
}

// validateGCSBackend holds gcsFaultToleranceOptions to its backend. Gantry
// runs the redis backend only: rocksdb is KubeRay v1.7's alpha
// GCSFaultToleranceEmbeddedStorage, off by default there too.
func validateGCSBackend(o *rayv1.GcsFaultToleranceOptions) error {
	path := specPath.Child("gcsFaultToleranceOptions")
	switch o.Backend {
	case rayv1.GcsFTBackendRocksDB:
		return forbiddenf(path.Child("backend"), "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') "+
			"requires KubeRay's GCSFaultToleranceEmbeddedStorage feature gate, which Gantry does not implement; use the redis backend")
	case "", rayv1.GcsFTBackendRedis:
		if o.Storage != nil {
			return forbiddenf(path.Child("storage"), "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the 'rocksdb' backend")
		}
		if o.RedisAddress == "" {
			return requiredf(path.Child("redisAddress"), "GcsFaultToleranceOptions.RedisAddress is required with the redis backend")
		}
	}
	return nil
}

// validateHistoryServer refuses KubeRay's history-server collector, which
// Gantry does not run (KubeRay v1.7's alpha gate RayClusterHistoryServer,
// off by default there too). KubeRay checks it after the autoscaler.
func validateHistoryServer(spec *rayv1.RayClusterSpec) error {
	if spec.HistoryServerOptions == nil {
		return nil
	}
	return forbiddenf(specPath.Child("historyServerOptions"), "RayClusterHistoryServer feature gate is not enabled: "+
		"Gantry does not implement KubeRay's history server collector; remove spec.historyServerOptions")
}

// validateUnimplementedV17 refuses the KubeRay v1.7 fields behind alpha
// gates (off by default there too) that Gantry does not implement, in
// KubeRay's order (after authentication), so none is admitted and then
// silently ignored.
func validateUnimplementedV17(spec *rayv1.RayClusterSpec) error {
	if spec.NetworkPolicy != nil {
		return forbiddenf(specPath.Child("networkPolicy"), "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled: "+
			"Gantry does not create NetworkPolicies for a RayCluster; remove spec.networkPolicy")
	}
	if spec.TLSOptions != nil {
		return forbiddenf(specPath.Child("tlsOptions"), "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled: "+
			"Gantry does not provision mTLS certificates for a RayCluster; remove spec.tlsOptions")
	}
	return nil
}

// Environment variables of the head container that validation inspects.
// Redis settings belong in gcsFaultToleranceOptions; setting them by hand as
// well would give Ray two sources of truth.
const (
	envRedisAddressForGCS  = "RAY_REDIS_ADDRESS"
	envRedisPasswordForGCS = "REDIS_PASSWORD"
	envRedisUsernameForGCS = "REDIS_USERNAME"
	envEnableAutoscalerV2  = "RAY_enable_autoscaler_v2"
)

func validateGCSFaultTolerance(spec *rayv1.RayClusterSpec, annotations map[string]string) error {
	ftOptions := spec.GcsFaultToleranceOptions
	if annotations[rayv1.RayFTEnabledAnnotationKey] != "" && ftOptions != nil {
		return forbiddenf(annotationsPath.Key(rayv1.RayFTEnabledAnnotationKey), "%s annotation and GcsFaultToleranceOptions are both set. "+
			"Please use only GcsFaultToleranceOptions to configure GCS fault tolerance", rayv1.RayFTEnabledAnnotationKey)
	}
	ftEnabled := ftOptions != nil || strings.EqualFold(annotations[rayv1.RayFTEnabledAnnotationKey], "true")
	_, redisAddressPath, redisAddressInEnv := headEnv(spec, envRedisAddressForGCS)
	if !ftEnabled && redisAddressInEnv {
		return forbiddenf(redisAddressPath, "%s is set which implicitly enables GCS fault tolerance, "+
			"but GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions "+
			"to enable GCS fault tolerance", envRedisAddressForGCS)
	}
	if ftOptions != nil {
		if spec.HeadGroupSpec.RayStartParams["redis-password"] != "" {
			return forbiddenf(headGroupPath.Child("rayStartParams").Key("redis-password"), "cannot set `redis-password` in rayStartParams when "+
				"GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead")
		}
		if _, path, ok := headEnv(spec, envRedisPasswordForGCS); ok {
			return forbiddenf(path, "cannot set `REDIS_PASSWORD` env var in head Pod when "+
				"GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead")
		}
		if redisAddressInEnv {
			return forbiddenf(redisAddressPath, "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when "+
				"GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisAddress instead")
		}
		if annotations[rayv1.RayExternalStorageNSAnnotationKey] != "" {
			return forbiddenf(annotationsPath.Key(rayv1.RayExternalStorageNSAnnotationKey), "cannot set `ray.io/external-storage-namespace` annotation when "+
				"GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.ExternalStorageNamespace instead")
		}
		if err := validateGCSBackend(ftOptions); err != nil {
			return err
		}
	}
	const usernameMessage = "cannot set redis username in rayStartParams or environment variables" +
		" - use GcsFaultToleranceOptions.RedisUsername instead"
	if spec.HeadGroupSpec.RayStartParams["redis-username"] != "" {
		return forbiddenf(headGroupPath.Child("rayStartParams").Key("redis-username"), usernameMessage)
	}
	if _, path, ok := headEnv(spec, envRedisUsernameForGCS); ok {
		return forbiddenf(path, usernameMessage)
	}
	return nil
}

func validateWorkerGroupSuspend(spec *rayv1.RayClusterSpec, opts SpecValidationOptions) error {
	if opts.AllowWorkerGroupSuspend {
		return nil
	}
	for i := range spec.WorkerGroupSpecs {
		if spec.WorkerGroupSpecs[i].IsSuspended() {
			return forbiddenf(workerGroupPath.Index(i).Child("suspend"), "worker group %s can be suspended only when the RayJobDeletionPolicy feature gate is enabled",
				spec.WorkerGroupSpecs[i].GroupName)
		}
	}
	return nil
}

func validateAutoscaler(spec *rayv1.RayClusterSpec) error {
	v2Env, v2EnvPath, v2EnvSet := headEnv(spec, envEnableAutoscalerV2)
	if !spec.AutoscalingEnabled() {
		if v2EnvSet && (v2Env.Value == "1" || v2Env.Value == "true") {
			return invalidf(v2EnvPath.Child("value"), v2Env.Value, "environment variable %s cannot be set to '%s' when enableInTreeAutoscaling is false. "+
				"Please set enableInTreeAutoscaling: true to use autoscaler v2", envEnableAutoscalerV2, v2Env.Value)
		}
	} else {
		for i := range spec.WorkerGroupSpecs {
			// The autoscaler would immediately scale a suspended group back up.
			if spec.WorkerGroupSpecs[i].IsSuspended() {
				return forbiddenf(workerGroupPath.Index(i).Child("suspend"), "worker group %s cannot be suspended with Autoscaler enabled", spec.WorkerGroupSpecs[i].GroupName)
			}
		}
		if spec.AutoscalerOptions != nil && spec.AutoscalerOptions.Version != nil && v2EnvSet {
			return forbiddenf(v2EnvPath, "both .spec.autoscalerOptions.version and head Pod env var %s are set, please only use the former", envEnableAutoscalerV2)
		}
		if podspec.AutoscalerV2(spec) {
			// Autoscaler v2 tells a dead node from a restarting one by the
			// Pod going away, which a restarting Pod never does.
			if p := spec.HeadGroupSpec.Template.Spec.RestartPolicy; p != "" && p != corev1.RestartPolicyNever {
				return invalidf(headGroupPath.Child("template", "spec", "restartPolicy"), string(p),
					"restartPolicy for head Pod should be Never or unset when using autoscaler V2")
			}
			for i := range spec.WorkerGroupSpecs {
				if p := spec.WorkerGroupSpecs[i].Template.Spec.RestartPolicy; p != "" && p != corev1.RestartPolicyNever {
					return invalidf(workerGroupPath.Index(i).Child("template", "spec", "restartPolicy"), string(p),
						"restartPolicy for worker group %s should be Never or unset when using autoscaler V2", spec.WorkerGroupSpecs[i].GroupName)
				}
			}
		}
	}
	if o := spec.AutoscalerOptions; o != nil && o.IdleTimeoutSeconds != nil && *o.IdleTimeoutSeconds < 0 {
		return invalidf(specPath.Child("autoscalerOptions", "idleTimeoutSeconds"), *o.IdleTimeoutSeconds,
			"autoscalerOptions.idleTimeoutSeconds must be non-negative, got %d", *o.IdleTimeoutSeconds)
	}
	// The operator sets it (podspec) for custom args to call; a user value
	// would shadow the generated command.
	if o := spec.AutoscalerOptions; o != nil {
		for i := range o.Env {
			if o.Env[i].Name == podspec.EnvAutoscalerStartCmd {
				return forbiddenf(specPath.Child("autoscalerOptions", "env").Index(i), "autoscalerOptions.env must not contain %s: "+
					"it is managed by KubeRay and injected automatically into the autoscaler container", podspec.EnvAutoscalerStartCmd)
			}
		}
	}
	return nil
}

var (
	minRayVersionForTokenAuth = version.MustParseGeneric("2.52.0")
	minRayVersionForK8sAuth   = version.MustParseGeneric("2.55.0")
)

// validateAuth checks that the Ray version can do the requested
// authentication; older Ray ignores the settings and would run unprotected.
func validateAuth(spec *rayv1.RayClusterSpec) error {
	auth := spec.AuthOptions
	k8sAuth := auth != nil && auth.EnableK8sTokenAuth != nil && *auth.EnableK8sTokenAuth
	tokenMode := podspec.AuthEnabled(spec)
	authPath := specPath.Child("authOptions")
	versionPath := specPath.Child("rayVersion")
	if !tokenMode {
		if k8sAuth {
			return forbiddenf(authPath.Child("enableK8sTokenAuth"), "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'")
		}
		return nil
	}
	if spec.RayVersion == "" {
		return requiredf(versionPath, "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is required")
	}
	rayVersion, err := version.ParseGeneric(spec.RayVersion)
	if err != nil {
		return invalidf(versionPath, spec.RayVersion, "authOptions.mode is 'token' but RayVersion format is invalid: %s, %v", spec.RayVersion, err)
	}
	if rayVersion.LessThan(minRayVersionForTokenAuth) {
		return invalidf(versionPath, spec.RayVersion, "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got %s", spec.RayVersion)
	}
	if k8sAuth {
		if rayVersion.LessThan(minRayVersionForK8sAuth) {
			return invalidf(versionPath, spec.RayVersion, "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got %s", spec.RayVersion)
		}
		if auth.SecretName != nil && *auth.SecretName != "" {
			return forbiddenf(authPath.Child("secretName"), "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set")
		}
	}
	return nil
}

// headEnv finds an env var of the head's Ray container (the first one) and
// its field path. Callers run after the containers-present check.
func headEnv(spec *rayv1.RayClusterSpec, name string) (corev1.EnvVar, *field.Path, bool) {
	containers := spec.HeadGroupSpec.Template.Spec.Containers
	if len(containers) == 0 {
		return corev1.EnvVar{}, nil, false
	}
	for i, env := range containers[0].Env {
		if env.Name == name {
			return env, headGroupPath.Child("template", "spec", "containers").Index(0).Child("env").Index(i), true
		}
	}
	return corev1.EnvVar{}, nil, false
}
