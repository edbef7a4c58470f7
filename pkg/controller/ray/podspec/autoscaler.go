package podspec

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

const (
	// AutoscalerContainerName is the name of the autoscaler sidecar in the head Pod.
	AutoscalerContainerName = "autoscaler"
	autoscalerStartCommand  = "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
	// EnvAutoscalerStartCmd holds the generated start command in the
	// autoscaler container, so that autoscalerOptions.args can run it
	// (KubeRay v1.7), as KUBERAY_GEN_RAY_START_CMD does for Ray's.
	EnvAutoscalerStartCmd = "KUBERAY_GEN_AUTOSCALER_START_CMD"
)

// AutoscalerV2 reports whether the user asked for autoscaler v2 with
// autoscalerOptions.version, as KubeRay's utils.IsAutoscalingV2Enabled. An
// unset version is not inferred from rayVersion: Ray then picks its own
// default, and the operator sets nothing for it.
func AutoscalerV2(spec *rayv1.RayClusterSpec) bool {
	o := spec.AutoscalerOptions
	return o != nil && o.Version != nil && *o.Version == rayv1.AutoscalerVersionV2
}

// autoscalerContainer builds the sidecar from the Ray image (so the
// autoscaler matches the Ray version) and layers autoscalerOptions over it.
func autoscalerContainer(cluster *rayv1.RayCluster, rayImage string, opts *BuildOptions) corev1.Container {
	c := corev1.Container{
		Name:            AutoscalerContainerName,
		Image:           rayImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{
			fieldRefEnv(EnvRayClusterName, labelFieldPath(rayv1.RayClusterLabelKey)),
			fieldRefEnv(EnvRayClusterNamespace, "metadata.namespace"),
			fieldRefEnv("RAY_HEAD_POD_NAME", "metadata.name"),
			{Name: "KUBERAY_CRD_VER", Value: "v1"},
			{Name: EnvAutoscalerStartCmd, Value: autoscalerStartCommand},
		},
		Command: opts.ContainerCommand(),
		Args:    []string{autoscalerStartCommand},
		Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("500m"),
				corev1.ResourceMemory: resource.MustParse("512Mi"),
			},
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("500m"),
				corev1.ResourceMemory: resource.MustParse("512Mi"),
			},
		},
	}
	if AuthEnabled(&cluster.Spec) {
		SetTokenAuthEnv(&c, cluster)
	}
	o := cluster.Spec.AutoscalerOptions
	if o == nil {
		return c
	}
	if o.Resources != nil {
		c.Resources = *o.Resources.DeepCopy()
	}
	if o.Image != nil {
		c.Image = *o.Image
	}
	if o.ImagePullPolicy != nil {
		c.ImagePullPolicy = *o.ImagePullPolicy
	}
	for i := range o.Env {
		c.Env = append(c.Env, *o.Env[i].DeepCopy())
	}
	for i := range o.EnvFrom {
		c.EnvFrom = append(c.EnvFrom, *o.EnvFrom[i].DeepCopy())
	}
	for i := range o.VolumeMounts {
		c.VolumeMounts = append(c.VolumeMounts, *o.VolumeMounts[i].DeepCopy())
	}
	if o.SecurityContext != nil {
		c.SecurityContext = o.SecurityContext.DeepCopy()
	}
	if len(o.Command) > 0 {
		c.Command = slices.Clone(o.Command)
	}
	if len(o.Args) > 0 {
		c.Args = slices.Clone(o.Args)
	}
	return c
}

// configureAutoscaler adds the autoscaler sidecar to a head template and
// switches Ray's own monitor off: it cannot scale Kubernetes Pods, the
// sidecar does that by patching the RayCluster.
func configureAutoscaler(cluster *rayv1.RayCluster, tmpl *corev1.PodTemplateSpec, params map[string]string, opts *BuildOptions) {
	params[paramNoMonitor] = "true"
	tmpl.Spec.ServiceAccountName = AutoscalerServiceAccountName(cluster)
	tmpl.Spec.Containers = append(tmpl.Spec.Containers, autoscalerContainer(cluster, tmpl.Spec.Containers[0].Image, opts))
	setAutoscalerVersionEnv(cluster, tmpl)
}

// setAutoscalerVersionEnv tells the Ray head that autoscaler v2 runs when
// the user asked for it. With v2 the autoscaler replaces failed Pods
// itself, so the Pods must not restart in place: restartPolicy Never,
// unless the user set one (validation admits only Never with v2).
func setAutoscalerVersionEnv(cluster *rayv1.RayCluster, tmpl *corev1.PodTemplateSpec) {
	if !AutoscalerV2(&cluster.Spec) {
		return
	}
	ray := &tmpl.Spec.Containers[0]
	ray.Env = addEnvIfMissing(ray.Env, corev1.EnvVar{Name: EnvRayEnableAutoscalerV2, Value: "true"})
	setRestartPolicyNever(&tmpl.Spec)
}

// setRestartPolicyNever sets the Pod's restartPolicy to Never unless the
// user set one; containers' own restartPolicy (native sidecars) is left
// alone.
func setRestartPolicyNever(spec *corev1.PodSpec) {
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyNever
	}
}
