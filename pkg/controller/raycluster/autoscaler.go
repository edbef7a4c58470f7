package raycluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/version"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

const (
	// AutoscalerContainerName is the name of the autoscaler sidecar in the head Pod.
	AutoscalerContainerName = "autoscaler"
	autoscalerStartCommand  = "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
)

// autoscalerV2MinRayVersion is the first Ray release whose default
// autoscaler is v2.
var autoscalerV2MinRayVersion = version.MustParseGeneric("2.47.0")

// autoscalerVersion is the autoscaler implementation a cluster runs: the
// explicit autoscalerOptions.version, else what its Ray version defaults to.
// ok is false when neither is known (no or unparsable rayVersion), in which
// case the operator leaves the choice to Ray.
func autoscalerVersion(spec *rayv1.RayClusterSpec) (v rayv1.AutoscalerVersion, ok bool) {
	if o := spec.AutoscalerOptions; o != nil && o.Version != nil {
		return *o.Version, true
	}
	rv, err := version.ParseGeneric(spec.RayVersion)
	if err != nil {
		return "", false
	}
	if rv.AtLeast(autoscalerV2MinRayVersion) {
		return rayv1.AutoscalerVersionV2, true
	}
	return rayv1.AutoscalerVersionV1, true
}

func autoscalerV2(spec *rayv1.RayClusterSpec) bool {
	v, ok := autoscalerVersion(spec)
	return ok && v == rayv1.AutoscalerVersionV2
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
		},
		Command: opts.containerCommand(),
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
	if authEnabled(&cluster.Spec) {
		setTokenAuthEnv(&c, cluster)
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

// setAutoscalerVersionEnv tells the Ray head which autoscaler runs. With v2
// the autoscaler replaces failed Pods itself, so the Pods must not restart
// in place.
func setAutoscalerVersionEnv(cluster *rayv1.RayCluster, tmpl *corev1.PodTemplateSpec) {
	v, ok := autoscalerVersion(&cluster.Spec)
	if !ok {
		return
	}
	ray := &tmpl.Spec.Containers[0]
	if v == rayv1.AutoscalerVersionV2 {
		ray.Env = addEnvIfMissing(ray.Env, corev1.EnvVar{Name: EnvRayEnableAutoscalerV2, Value: "true"})
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		return
	}
	ray.Env = addEnvIfMissing(ray.Env, corev1.EnvVar{Name: EnvRayEnableAutoscalerV2, Value: "false"})
}
