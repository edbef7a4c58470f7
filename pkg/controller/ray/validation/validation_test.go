package validation

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// validationFixture is a cluster every rule accepts; each test row breaks
// exactly one thing.
func validationFixture() *rayv1.RayCluster {
	container := func(name string) []corev1.Container {
		return []corev1.Container{{Name: name, Image: "rayproject/ray:2.52.0"}}
	}
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "raycluster-sample", Namespace: "default"},
		Spec: rayv1.RayClusterSpec{
			RayVersion: "2.52.0",
			HeadGroupSpec: rayv1.HeadGroupSpec{
				RayStartParams: map[string]string{},
				Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: container("ray-head")}},
			},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
				GroupName:   "cpu",
				Replicas:    ptr.To[int32](1),
				MinReplicas: ptr.To[int32](0),
				MaxReplicas: ptr.To[int32](5),
				Template:    corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: container("ray-worker")}},
			}},
		},
	}
}

func setHeadEnv(c *rayv1.RayCluster, name, value string) {
	ctr := &c.Spec.HeadGroupSpec.Template.Spec.Containers[0]
	ctr.Env = append(ctr.Env, corev1.EnvVar{Name: name, Value: value})
}

func TestValidate(t *testing.T) {
	v2 := rayv1.AutoscalerVersionV2
	recreate := rayv1.RayClusterRecreate
	rolling := rayv1.RayClusterUpgradeType("Rolling")
	gcsFT := &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
	condition := func(t rayv1.RayClusterConditionType) metav1.Condition {
		return metav1.Condition{Type: string(t), Status: metav1.ConditionTrue, Reason: string(t)}
	}

	tests := []struct {
		name    string
		mutate  func(c *rayv1.RayCluster)
		opts    SpecValidationOptions
		layer   ValidationLayer // "" means valid
		message string          // exact, or a prefix when it ends in "..."
	}{
		{name: "valid cluster", mutate: func(*rayv1.RayCluster) {}},

		// Metadata
		{name: "name of 53 characters is allowed", mutate: func(c *rayv1.RayCluster) { c.Name = strings.Repeat("a", 53) }},
		{
			name: "name longer than 53", mutate: func(c *rayv1.RayCluster) { c.Name = strings.Repeat("a", 54) },
			layer: ValidationLayerMetadata, message: "RayCluster name should be no more than 53 characters",
		},
		{
			name: "name with upper case", mutate: func(c *rayv1.RayCluster) { c.Name = "RayCluster" },
			layer: ValidationLayerMetadata, message: "RayCluster name should be a valid DNS1035 label: ...",
		},
		{
			name: "name starting with a digit", mutate: func(c *rayv1.RayCluster) { c.Name = "1cluster" },
			layer: ValidationLayerMetadata, message: "RayCluster name should be a valid DNS1035 label: ...",
		},

		// Spec: containers, groups, replicas
		{
			name: "head without containers", mutate: func(c *rayv1.RayCluster) { c.Spec.HeadGroupSpec.Template.Spec.Containers = nil },
			layer: ValidationLayerSpec, message: "headGroupSpec should have at least one container",
		},
		{
			name: "worker group without containers", mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Template.Spec.Containers = nil },
			layer: ValidationLayerSpec, message: "workerGroupSpec should have at least one container",
		},
		{
			name: "duplicate worker group names",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.WorkerGroupSpecs = append(c.Spec.WorkerGroupSpecs, *c.Spec.WorkerGroupSpecs[0].DeepCopy())
			},
			layer: ValidationLayerSpec, message: `worker group names must be unique: "cpu" is used more than once`,
		},
		{
			name: "negative minReplicas", mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](-1) },
			layer: ValidationLayerSpec, message: "worker group cpu has negative minReplicas -1",
		},
		{
			name: "negative maxReplicas", mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](-1) },
			layer: ValidationLayerSpec, message: "worker group cpu has negative maxReplicas -1",
		},
		{
			name: "minReplicas above maxReplicas", mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](6) },
			layer: ValidationLayerSpec, message: "worker group cpu has minReplicas 6 greater than maxReplicas 5",
		},
		{
			name:   "minReplicas equal to maxReplicas is allowed",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](5) },
		},

		// Spec: resources and labels
		{
			name: "head resources in rayStartParams and resources",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.HeadGroupSpec.RayStartParams["num-cpus"] = "2"
				c.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "2"}
			},
			layer: ValidationLayerSpec, message: "resource fields should not be set in both rayStartParams and Resources for Head group; please use only one",
		},
		{
			name: "worker custom resources in rayStartParams and resources",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.WorkerGroupSpecs[0].RayStartParams = map[string]string{"resources": `'{"TPU": 4}'`}
				c.Spec.WorkerGroupSpecs[0].Resources = map[string]string{"TPU": "4"}
			},
			layer: ValidationLayerSpec, message: "resource fields should not be set in both rayStartParams and Resources for cpu group; please use only one",
		},
		{
			name: "resources only in the resources field are allowed",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.WorkerGroupSpecs[0].Resources = map[string]string{"CPU": "4"}
				c.Spec.WorkerGroupSpecs[0].RayStartParams = map[string]string{"block": "true"}
			},
		},
		{
			name: "labels in rayStartParams",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.WorkerGroupSpecs[0].RayStartParams = map[string]string{"labels": "a=b"}
			},
			layer: ValidationLayerSpec, message: "rayStartParams['labels'] is not supported for cpu group; please use the top-level Labels field instead",
		},
		{
			name:   "invalid label key",
			mutate: func(c *rayv1.RayCluster) { c.Spec.HeadGroupSpec.Labels = map[string]string{"bad key": "v"} },
			layer:  ValidationLayerSpec, message: "invalid label key for Head group: 'bad key', error: ...",
		},
		{
			name:   "invalid label value",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Labels = map[string]string{"zone": "not valid!"} },
			layer:  ValidationLayerSpec, message: "invalid label value for key 'zone' in cpu group: 'not valid!', error: ...",
		},

		// Spec: idle timeout
		{
			name:   "negative group idleTimeoutSeconds",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].IdleTimeoutSeconds = ptr.To[int32](-5) },
			layer:  ValidationLayerSpec, message: "worker group cpu: idleTimeoutSeconds must be non-negative, got -5",
		},
		{
			name:   "group idleTimeoutSeconds without autoscaler v2",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].IdleTimeoutSeconds = ptr.To[int32](60) },
			layer:  ValidationLayerSpec, message: "worker group cpu: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. ...",
		},
		{
			name: "group idleTimeoutSeconds with autoscaler v2",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: &v2}
				c.Spec.WorkerGroupSpecs[0].IdleTimeoutSeconds = ptr.To[int32](60)
			},
		},
		{
			name: "group idleTimeoutSeconds with the v2 env var",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				setHeadEnv(c, "RAY_enable_autoscaler_v2", "true")
				c.Spec.WorkerGroupSpecs[0].IdleTimeoutSeconds = ptr.To[int32](60)
			},
		},

		// Spec: GCS fault tolerance
		{
			name: "ft annotation and gcsFaultToleranceOptions",
			mutate: func(c *rayv1.RayCluster) {
				c.Annotations = map[string]string{rayv1.RayFTEnabledAnnotationKey: "true"}
				c.Spec.GcsFaultToleranceOptions = gcsFT
			},
			layer: ValidationLayerSpec, message: "ray.io/ft-enabled annotation and GcsFaultToleranceOptions are both set. Please use only GcsFaultToleranceOptions to configure GCS fault tolerance",
		},
		{
			name:   "RAY_REDIS_ADDRESS without fault tolerance",
			mutate: func(c *rayv1.RayCluster) { setHeadEnv(c, "RAY_REDIS_ADDRESS", "redis:6379") },
			layer:  ValidationLayerSpec, message: "RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance",
		},
		{
			name: "RAY_REDIS_ADDRESS with the legacy ft annotation is allowed",
			mutate: func(c *rayv1.RayCluster) {
				c.Annotations = map[string]string{rayv1.RayFTEnabledAnnotationKey: "True"}
				setHeadEnv(c, "RAY_REDIS_ADDRESS", "redis:6379")
			},
		},
		{
			name: "redis-password rayStartParam with gcsFaultToleranceOptions",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.GcsFaultToleranceOptions = gcsFT
				c.Spec.HeadGroupSpec.RayStartParams["redis-password"] = "secret"
			},
			layer: ValidationLayerSpec, message: "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead",
		},
		{
			name: "REDIS_PASSWORD env with gcsFaultToleranceOptions",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.GcsFaultToleranceOptions = gcsFT
				setHeadEnv(c, "REDIS_PASSWORD", "secret")
			},
			layer: ValidationLayerSpec, message: "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead",
		},
		{
			name: "RAY_REDIS_ADDRESS env with gcsFaultToleranceOptions",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.GcsFaultToleranceOptions = gcsFT
				setHeadEnv(c, "RAY_REDIS_ADDRESS", "redis:6379")
			},
			layer: ValidationLayerSpec, message: "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisAddress instead",
		},
		{
			name: "external storage namespace annotation with gcsFaultToleranceOptions",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.GcsFaultToleranceOptions = gcsFT
				c.Annotations = map[string]string{rayv1.RayExternalStorageNSAnnotationKey: "ns"}
			},
			layer: ValidationLayerSpec, message: "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.ExternalStorageNamespace instead",
		},
		{
			name:   "redis-username rayStartParam",
			mutate: func(c *rayv1.RayCluster) { c.Spec.HeadGroupSpec.RayStartParams["redis-username"] = "user" },
			layer:  ValidationLayerSpec, message: "cannot set redis username in rayStartParams or environment variables - use GcsFaultToleranceOptions.RedisUsername instead",
		},
		{
			name:   "REDIS_USERNAME env",
			mutate: func(c *rayv1.RayCluster) { setHeadEnv(c, "REDIS_USERNAME", "user") },
			layer:  ValidationLayerSpec, message: "cannot set redis username in rayStartParams or environment variables - use GcsFaultToleranceOptions.RedisUsername instead",
		},
		{
			name:   "gcsFaultToleranceOptions alone is valid",
			mutate: func(c *rayv1.RayCluster) { c.Spec.GcsFaultToleranceOptions = gcsFT },
		},

		// Spec: worker group suspend and autoscaler
		{
			name:   "suspended worker group without the RayJobDeletionPolicy gate",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true) },
			layer:  ValidationLayerSpec, message: "worker group cpu can be suspended only when the RayJobDeletionPolicy feature gate is enabled",
		},
		{
			name:   "suspended worker group with the gate",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true) },
			opts:   SpecValidationOptions{AllowWorkerGroupSuspend: true},
		},
		{
			name: "suspended worker group with the autoscaler",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true)
			},
			opts:  SpecValidationOptions{AllowWorkerGroupSuspend: true},
			layer: ValidationLayerSpec, message: "worker group cpu cannot be suspended with Autoscaler enabled",
		},
		{
			name:   "autoscaler v2 env without the autoscaler",
			mutate: func(c *rayv1.RayCluster) { setHeadEnv(c, "RAY_enable_autoscaler_v2", "1") },
			layer:  ValidationLayerSpec, message: "environment variable RAY_enable_autoscaler_v2 cannot be set to '1' when enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use autoscaler v2",
		},
		{
			name:   "autoscaler v2 env set to false without the autoscaler",
			mutate: func(c *rayv1.RayCluster) { setHeadEnv(c, "RAY_enable_autoscaler_v2", "false") },
		},
		{
			name: "autoscaler version and v2 env both set",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: &v2}
				setHeadEnv(c, "RAY_enable_autoscaler_v2", "true")
			},
			layer: ValidationLayerSpec, message: "both .spec.autoscalerOptions.version and head Pod env var RAY_enable_autoscaler_v2 are set, please only use the former",
		},
		{
			name: "autoscaler v2 with head restartPolicy Always",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: &v2}
				c.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			},
			layer: ValidationLayerSpec, message: "restartPolicy for head Pod should be Never or unset when using autoscaler V2",
		},
		{
			name: "autoscaler v2 with worker restartPolicy OnFailure",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: &v2}
				c.Spec.WorkerGroupSpecs[0].Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			},
			layer: ValidationLayerSpec, message: "restartPolicy for worker group cpu should be Never or unset when using autoscaler V2",
		},
		{
			name: "negative autoscaler idleTimeoutSeconds",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{IdleTimeoutSeconds: ptr.To[int32](-1)}
			},
			layer: ValidationLayerSpec, message: "autoscalerOptions.idleTimeoutSeconds must be non-negative, got -1",
		},

		// Spec: authentication
		{
			name: "token auth without rayVersion",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = ""
				c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
			},
			layer: ValidationLayerSpec, message: "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is required",
		},
		{
			name: "token auth with an unparsable rayVersion",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "latest"
				c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
			},
			layer: ValidationLayerSpec, message: "authOptions.mode is 'token' but RayVersion format is invalid: latest, ...",
		},
		{
			name: "token auth on Ray 2.51",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.51.1"
				c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
			},
			layer: ValidationLayerSpec, message: "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.51.1",
		},
		{
			// KubeRay v1.6.2 utils.IsAuthEnabled: an empty mode is not token.
			name: "empty auth mode is not token",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.40.0"
				c.Spec.AuthOptions = &rayv1.AuthOptions{}
			},
		},
		{
			name: "kubernetes token auth with an empty mode",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.55.0"
				c.Spec.AuthOptions = &rayv1.AuthOptions{EnableK8sTokenAuth: ptr.To(true)}
			},
			layer: ValidationLayerSpec, message: "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'",
		},
		{
			name:   "token auth on Ray 2.52",
			mutate: func(c *rayv1.RayCluster) { c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken} },
		},
		{
			name: "disabled auth needs no rayVersion",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = ""
				c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled}
			},
		},
		{
			name: "kubernetes token auth without token mode",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled, EnableK8sTokenAuth: ptr.To(true)}
			},
			layer: ValidationLayerSpec, message: "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'",
		},
		{
			name: "kubernetes token auth on Ray 2.54",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.54.0"
				c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
			},
			layer: ValidationLayerSpec, message: "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got 2.54.0",
		},
		{
			name: "kubernetes token auth with a secretName",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.55.0"
				c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true), SecretName: ptr.To("tok")}
			},
			layer: ValidationLayerSpec, message: "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set",
		},

		// Upgrade options
		{
			name:   "Recreate on a user's cluster",
			mutate: func(c *rayv1.RayCluster) { c.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: &recreate} },
		},
		{
			name:   "unknown upgrade strategy",
			mutate: func(c *rayv1.RayCluster) { c.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: &rolling} },
			layer:  ValidationLayerUpgradeOptions, message: "The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value Rolling is invalid, valid options are Recreate or None",
		},
		{
			name: "upgrade strategy on a RayJob's cluster",
			mutate: func(c *rayv1.RayCluster) {
				c.Labels = map[string]string{rayv1.RayOriginatedFromCRDLabelKey: "RayJob"}
				c.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: &recreate}
			},
			layer: ValidationLayerUpgradeOptions, message: "upgradeStrategy cannot be set when RayCluster is created by RayJob",
		},
		{
			name: "upgrade strategy on a RayService's cluster",
			mutate: func(c *rayv1.RayCluster) {
				c.Labels = map[string]string{rayv1.RayOriginatedFromCRDLabelKey: "RayService"}
				c.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: &recreate}
			},
			layer: ValidationLayerUpgradeOptions, message: "upgradeStrategy cannot be set when RayCluster is created by RayService",
		},

		// Status
		{
			name: "suspending and suspended both true",
			mutate: func(c *rayv1.RayCluster) {
				c.Status.Conditions = []metav1.Condition{condition(rayv1.RayClusterSuspending), condition(rayv1.RayClusterSuspended)}
			},
			layer: ValidationLayerStatus, message: "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true",
		},
		{
			name: "suspending alone",
			mutate: func(c *rayv1.RayCluster) {
				c.Status.Conditions = []metav1.Condition{condition(rayv1.RayClusterSuspending)}
			},
		},

		// Priority: the first failing layer is reported.
		{
			name: "metadata is checked before spec",
			mutate: func(c *rayv1.RayCluster) {
				c.Name = "Bad"
				c.Spec.HeadGroupSpec.Template.Spec.Containers = nil
			},
			layer: ValidationLayerMetadata, message: "RayCluster name should be a valid DNS1035 label: ...",
		},

		// KubeRay v1.7.0's fields and rules.
		{
			name:   "group priority 0 (the CRD default) is no priority",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Priority = ptr.To[int32](0) },
		},
		{
			name: "group priority without rayVersion",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = ""
				c.Spec.WorkerGroupSpecs[0].Priority = ptr.To[int32](2)
			},
			layer: ValidationLayerSpec, message: "worker group cpu: priority is set, but RayVersion was not specified. Ray version 2.56.0 or later is required",
		},
		{
			name: "group priority on Ray before 2.56",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.55.1"
				c.Spec.WorkerGroupSpecs[0].Priority = ptr.To[int32](2)
			},
			layer: ValidationLayerSpec, message: "worker group cpu: priority is set, but minimum Ray version is 2.56.0, got 2.55.1",
		},
		{
			name: "group priority without autoscaler v2",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.56.0"
				c.Spec.WorkerGroupSpecs[0].Priority = ptr.To[int32](2)
			},
			layer: ValidationLayerSpec, message: "worker group cpu: priority is set to 2, but autoscaler v2 is not enabled. Priority is only supported with autoscaler v2 enabled",
		},
		{
			name: "group priority with autoscaler v2 on Ray 2.56",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.56.0"
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: &v2}
				c.Spec.WorkerGroupSpecs[0].Priority = ptr.To[int32](2)
			},
		},
		{
			name: "autoscalerOptions.env sets the generated start command",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Env: []corev1.EnvVar{{Name: "KUBERAY_GEN_AUTOSCALER_START_CMD", Value: "x"}}}
			},
			layer: ValidationLayerSpec, message: "autoscalerOptions.env must not contain KUBERAY_GEN_AUTOSCALER_START_CMD: " +
				"it is managed by KubeRay and injected automatically into the autoscaler container",
		},
		{
			name: "autoscalerOptions command and args",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Command: []string{"/bin/sh", "-c"}, Args: []string{"ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD"}}
			},
		},
		{
			name: "the redis backend named",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRedis, RedisAddress: "redis:6379"}
			},
		},
		{
			name: "the redis backend without an address",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{ExternalStorageNamespace: "ns"}
			},
			layer: ValidationLayerSpec, message: "GcsFaultToleranceOptions.RedisAddress is required with the redis backend",
		},
		{
			name: "the redis backend with storage",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379", Storage: &rayv1.GcsEmbeddedStorage{ClaimName: "c"}}
			},
			layer: ValidationLayerSpec, message: "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the 'rocksdb' backend",
		},
		{
			name: "the rocksdb backend",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB}
			},
			layer: ValidationLayerSpec, message: "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') requires KubeRay's GCSFaultToleranceEmbeddedStorage feature gate, ...",
		},
		{
			name:   "historyServerOptions",
			mutate: func(c *rayv1.RayCluster) { c.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{} },
			layer:  ValidationLayerSpec, message: "RayClusterHistoryServer feature gate is not enabled: ...",
		},
		{
			name:   "networkPolicy",
			mutate: func(c *rayv1.RayCluster) { c.Spec.NetworkPolicy = &rayv1.NetworkPolicyConfig{} },
			layer:  ValidationLayerSpec, message: "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled: ...",
		},
		{
			name:   "tlsOptions, even disabled",
			mutate: func(c *rayv1.RayCluster) { c.Spec.TLSOptions = &rayv1.TLSOptions{Enabled: ptr.To(false)} },
			layer:  ValidationLayerSpec, message: "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled: ...",
		},
		{
			name: "KubeRay's order: the history server before auth, auth before networkPolicy",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.NetworkPolicy = &rayv1.NetworkPolicyConfig{}
				c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
				c.Spec.RayVersion = "2.40.0"
			},
			layer: ValidationLayerSpec, message: "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.40.0",
		},
		{
			name: "spec is checked before upgrade options and status",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.WorkerGroupSpecs[0].Template.Spec.Containers = nil
				c.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: &rolling}
				c.Status.Conditions = []metav1.Condition{condition(rayv1.RayClusterSuspending), condition(rayv1.RayClusterSuspended)}
			},
			layer: ValidationLayerSpec, message: "workerGroupSpec should have at least one container",
		},
		{
			name: "upgrade options are checked before status",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: &rolling}
				c.Status.Conditions = []metav1.Condition{condition(rayv1.RayClusterSuspending), condition(rayv1.RayClusterSuspended)}
			},
			layer: ValidationLayerUpgradeOptions, message: "The RayCluster spec is invalid: ...",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := validationFixture()
			tc.mutate(cluster)
			got := Validate(cluster, tc.opts)
			if tc.layer == "" {
				if got != nil {
					t.Fatalf("Validate() = %v (layer %s), want nil", got, got.Layer)
				}
				return
			}
			if got == nil {
				t.Fatalf("Validate() = nil, want a %s error", tc.layer)
			}
			if got.Layer != tc.layer {
				t.Errorf("layer = %s, want %s (error %q)", got.Layer, tc.layer, got.Error())
			}
			if prefix, ok := strings.CutSuffix(tc.message, "..."); ok {
				if !strings.HasPrefix(got.Error(), prefix) {
					t.Errorf("error = %q, want prefix %q", got.Error(), prefix)
				}
			} else if got.Error() != tc.message {
				t.Errorf("error = %q\nwant    %q", got.Error(), tc.message)
			}
		})
	}
}

func TestValidationErrorReporting(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		layer     ValidationLayer
		reason    rayv1.EventReason
		message   string
		transient bool
	}{
		{ValidationLayerMetadata, rayv1.InvalidRayClusterMetadata, "The RayCluster metadata is invalid ns/rc: boom", false},
		{ValidationLayerSpec, rayv1.InvalidRayClusterSpec, "The RayCluster spec is invalid ns/rc: boom", false},
		{ValidationLayerUpgradeOptions, rayv1.InvalidRayClusterSpec, "The RayCluster spec is invalid ns/rc: boom", false},
		{ValidationLayerStatus, rayv1.InvalidRayClusterStatus, "The RayCluster status is invalid ns/rc, boom", true},
	}
	for _, tc := range tests {
		t.Run(string(tc.layer), func(t *testing.T) {
			e := &ValidationError{Layer: tc.layer, Err: cause}
			if got := e.EventReason(); got != tc.reason {
				t.Errorf("EventReason() = %s, want %s", got, tc.reason)
			}
			if got := e.EventMessage("ns", "rc"); got != tc.message {
				t.Errorf("EventMessage() = %q, want %q", got, tc.message)
			}
			if got := e.Transient(); got != tc.transient {
				t.Errorf("Transient() = %v, want %v", got, tc.transient)
			}
			if !errors.Is(e, cause) {
				t.Error("the cause is not reachable with errors.Is")
			}
		})
	}
}

func TestLabelErrorsAreDeterministic(t *testing.T) {
	labels := map[string]string{"b key": "v", "a key": "v", "c key": "v"}
	first := validateGroupLabels(headGroupPath, "Head", nil, labels)
	if first == nil {
		t.Fatal("want an error for invalid keys")
	}
	for range 20 {
		if got := validateGroupLabels(headGroupPath, "Head", nil, labels); got.Error() != first.Error() {
			t.Fatalf("message changed between calls:\n%q\n%q", first, got)
		}
	}
	if !strings.HasPrefix(first.Error(), "invalid label key for Head group: 'a key'") {
		t.Errorf("keys are not reported in sorted order: %q", first)
	}
}
