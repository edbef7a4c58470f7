package podspec

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// Environment variables set on Ray containers. The names are KubeRay's (and
// Ray's): Ray, the autoscaler and user entrypoints read them.
const (
	EnvRayClusterName             = "RAY_CLUSTER_NAME"
	EnvRayClusterNamespace        = "RAY_CLUSTER_NAMESPACE"
	EnvRayCloudInstanceID         = "RAY_CLOUD_INSTANCE_ID"
	EnvRayNodeTypeName            = "RAY_NODE_TYPE_NAME"
	EnvRayIP                      = "RAY_IP"
	EnvFQRayIP                    = "FQ_RAY_IP"
	EnvRayPort                    = "RAY_PORT"
	EnvRayAddress                 = "RAY_ADDRESS"
	EnvRayUsageStatsKubeRayInUse  = "RAY_USAGE_STATS_KUBERAY_IN_USE"
	EnvRayUsageStatsExtraTags     = "RAY_USAGE_STATS_EXTRA_TAGS"
	EnvRayDashboardK8sDiskUsage   = "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"
	EnvKubeRayGenRayStartCmd      = "KUBERAY_GEN_RAY_START_CMD"
	EnvRayStartUlimitOpenFiles    = "RAY_START_ULIMIT_OPEN_FILES"
	EnvRayRedisAddress            = "RAY_REDIS_ADDRESS"
	EnvRedisUsername              = "REDIS_USERNAME"
	EnvRedisPassword              = "REDIS_PASSWORD"
	EnvRayExternalStorageNS       = "RAY_external_storage_namespace"
	EnvRayGCSReconnectTimeoutS    = "RAY_gcs_rpc_server_reconnect_timeout_s"
	EnvRayEnableAutoscalerV2      = "RAY_enable_autoscaler_v2"
	EnvRayTimeoutMsWaitDeathInfo  = "RAY_timeout_ms_task_wait_for_death_info"
	EnvRayGCSServerRequestTimeout = "RAY_gcs_server_request_timeout_seconds"
	EnvRayServeKVTimeoutS         = "RAY_SERVE_KV_TIMEOUT_S"
	EnvRayAuthMode                = "RAY_AUTH_MODE"
	EnvRayAuthToken               = "RAY_AUTH_TOKEN"
	EnvRayEnableK8sTokenAuth      = "RAY_ENABLE_K8S_TOKEN_AUTH"
)

const (
	localhost = "127.0.0.1"
	// workerGCSReconnectTimeoutS gives workers of a fault-tolerant cluster
	// ten minutes to find the restarted GCS; Ray's 60s default makes them
	// exit while a new head Pod is still starting.
	workerGCSReconnectTimeoutS = "600"
	// AuthTokenSecretKey is the key of the token in the auth Secret.
	AuthTokenSecretKey = "auth_token"
	// rayTokenVolumeName and rayTokenMountPath hold the projected
	// ServiceAccount token used by Kubernetes token authentication.
	rayTokenVolumeName = "ray-token"
	rayTokenMountPath  = "/var/run/secrets/ray.io/serviceaccount"
)

// creatorKind is the kind of the custom resource a cluster was made for
// (RayCluster itself, RayJob or RayService), read from the label RayJob and
// RayService put on their clusters.
func creatorKind(cluster *rayv1.RayCluster) string {
	switch v := cluster.Labels[rayv1.RayOriginatedFromCRDLabelKey]; v {
	case "RayJob", "RayService":
		return v
	default:
		return rayv1.RayClusterKind
	}
}

func fieldRefEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath},
	}}
}

func labelFieldPath(key string) string {
	return fmt.Sprintf("metadata.labels['%s']", key)
}

func HasEnv(env []corev1.EnvVar, name string) bool {
	for i := range env {
		if env[i].Name == name {
			return true
		}
	}
	return false
}

// SetEnv replaces the variable called v.Name or appends v. It is used for
// variables the operator owns: a user value would only be a stale copy.
func SetEnv(env []corev1.EnvVar, v corev1.EnvVar) []corev1.EnvVar {
	for i := range env {
		if env[i].Name == v.Name {
			env[i] = v
			return env
		}
	}
	return append(env, v)
}

// addEnvIfMissing appends v unless the user already set the variable; used
// for defaults the user may override.
func addEnvIfMissing(env []corev1.EnvVar, v corev1.EnvVar) []corev1.EnvVar {
	if HasEnv(env, v.Name) {
		return env
	}
	return append(env, v)
}

// nodeEnv describes what the Ray container's environment depends on.
type nodeEnv struct {
	nodeType    rayv1.RayNodeType
	fqdnRayIP   string
	headPort    string
	rayStartCmd string
	creator     string
	opts        *BuildOptions
}

// setRayContainerEnv adds the variables every Ray container gets. Operator
// defaults from the manager's configuration come first so any of the
// well-known variables below still behaves as documented.
func setRayContainerEnv(c *corev1.Container, e nodeEnv) {
	for _, v := range e.opts.DefaultContainerEnvs {
		c.Env = addEnvIfMissing(c.Env, *v.DeepCopy())
	}
	ip := localhost
	if e.nodeType == rayv1.WorkerNode {
		ip = e.fqdnRayIP
		c.Env = SetEnv(c.Env, corev1.EnvVar{Name: EnvFQRayIP, Value: e.fqdnRayIP})
		// RAY_IP (the short Service name) is deprecated but still read by
		// older entrypoints.
		c.Env = SetEnv(c.Env, corev1.EnvVar{Name: EnvRayIP, Value: shortServiceName(e.fqdnRayIP)})
	}
	c.Env = SetEnv(c.Env, fieldRefEnv(EnvRayClusterName, labelFieldPath(rayv1.RayClusterLabelKey)))
	c.Env = SetEnv(c.Env, fieldRefEnv(EnvRayClusterNamespace, "metadata.namespace"))
	// Autoscaler v2 identifies nodes by Pod name and node type by group.
	c.Env = SetEnv(c.Env, fieldRefEnv(EnvRayCloudInstanceID, "metadata.name"))
	c.Env = SetEnv(c.Env, fieldRefEnv(EnvRayNodeTypeName, labelFieldPath(rayv1.RayNodeGroupLabelKey)))
	// Exposed even when the command is the user's, so a custom entrypoint
	// can still run the generated `ray start` line.
	c.Env = SetEnv(c.Env, corev1.EnvVar{Name: EnvKubeRayGenRayStartCmd, Value: e.rayStartCmd})
	c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayPort, Value: e.headPort})
	if e.creator == "RayService" {
		// Faster failure detection keeps Serve's request failover short.
		c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayTimeoutMsWaitDeathInfo, Value: "0"})
		c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayGCSServerRequestTimeout, Value: "5"})
		c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayServeKVTimeoutS, Value: "5"})
	}
	// Lets ray.init() inside the Pod find the cluster without arguments.
	c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayAddress, Value: ip + ":" + e.headPort})
	c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayUsageStatsKubeRayInUse, Value: "1"})
	if e.nodeType == rayv1.HeadNode {
		c.Env = SetEnv(c.Env, corev1.EnvVar{
			Name:  EnvRayUsageStatsExtraTags,
			Value: fmt.Sprintf("kuberay_version=%s;kuberay_crd=%s", KubeRayCompatibleVersion, e.creator),
		})
	}
	c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayDashboardK8sDiskUsage, Value: "1"})
}

// setInitContainerEnv gives init containers the head's address: the
// injected wait-gcs-ready container and user init containers that wait for
// the head themselves both need it.
func setInitContainerEnv(c *corev1.Container, fqdnRayIP string) {
	c.Env = SetEnv(c.Env, corev1.EnvVar{Name: EnvFQRayIP, Value: fqdnRayIP})
	c.Env = SetEnv(c.Env, corev1.EnvVar{Name: EnvRayIP, Value: shortServiceName(fqdnRayIP)})
}

func shortServiceName(fqdn string) string {
	name, _, _ := strings.Cut(fqdn, ".")
	return name
}

// configureGCSFaultTolerance sets the annotations, env vars and start params
// of GCS fault tolerance on a node. params is the node's private copy.
func configureGCSFaultTolerance(cluster *rayv1.RayCluster, nodeType rayv1.RayNodeType, tmpl *corev1.PodTemplateSpec, params map[string]string) {
	enabled := cluster.GCSFaultToleranceEnabled()
	if nodeType == rayv1.HeadNode {
		tmpl.Annotations[rayv1.RayFTEnabledAnnotationKey] = strconv.FormatBool(enabled)
	}
	if !enabled {
		return
	}
	c := &tmpl.Spec.Containers[0]
	if nodeType == rayv1.WorkerNode {
		c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayGCSReconnectTimeoutS, Value: workerGCSReconnectTimeoutS})
		return
	}

	storageNS := ExternalStorageNamespace(cluster)
	tmpl.Annotations[rayv1.RayExternalStorageNSAnnotationKey] = storageNS
	c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayExternalStorageNS, Value: storageNS})

	ft := cluster.Spec.GcsFaultToleranceOptions
	if ft == nil {
		// Annotation-style FT: a literal redis-password in rayStartParams is
		// also exported so the Redis cleanup Job can authenticate.
		if pw, ok := params[paramRedisPassword]; ok {
			c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRedisPassword, Value: pw})
		}
		return
	}
	c.Env = SetEnv(c.Env, corev1.EnvVar{Name: EnvRayRedisAddress, Value: ft.RedisAddress})
	// The credentials travel as env vars (possibly from Secrets) and the
	// flags only reference them, so no secret ends up in the Pod's args.
	if ft.RedisUsername != nil {
		params[paramRedisUsername] = "$" + EnvRedisUsername
		c.Env = SetEnv(c.Env, credentialEnv(EnvRedisUsername, ft.RedisUsername))
	}
	if ft.RedisPassword != nil {
		params[paramRedisPassword] = "$" + EnvRedisPassword
		c.Env = SetEnv(c.Env, credentialEnv(EnvRedisPassword, ft.RedisPassword))
	}
}

func credentialEnv(name string, cred *rayv1.RedisCredential) corev1.EnvVar {
	return corev1.EnvVar{Name: name, Value: cred.Value, ValueFrom: cred.ValueFrom.DeepCopy()}
}

// ExternalStorageNamespace is the Redis key namespace of a fault-tolerant
// cluster: gcsFaultToleranceOptions, else the older annotation, else the
// cluster UID, so a re-created cluster of the same name starts clean.
func ExternalStorageNamespace(cluster *rayv1.RayCluster) string {
	if ft := cluster.Spec.GcsFaultToleranceOptions; ft != nil && ft.ExternalStorageNamespace != "" {
		return ft.ExternalStorageNamespace
	}
	if v, ok := cluster.Annotations[rayv1.RayExternalStorageNSAnnotationKey]; ok {
		return v
	}
	return string(cluster.UID)
}

// AuthEnabled reports whether Ray token authentication is on: only an
// explicit mode token turns it on, as KubeRay's utils.IsAuthEnabled. An
// empty mode leaves the Pods without Ray's auth settings (although the
// token Secret is still generated, see reconcileAuthSecret).
func AuthEnabled(spec *rayv1.RayClusterSpec) bool {
	return spec.AuthOptions != nil && spec.AuthOptions.Mode == rayv1.AuthModeToken
}

func k8sTokenAuthEnabled(spec *rayv1.RayClusterSpec) bool {
	a := spec.AuthOptions
	return AuthEnabled(spec) && a.EnableK8sTokenAuth != nil && *a.EnableK8sTokenAuth
}

// AuthSecretName is the Secret holding the cluster's Ray auth token.
func AuthSecretName(cluster *rayv1.RayCluster) string {
	if a := cluster.Spec.AuthOptions; a != nil && a.SecretName != nil && *a.SecretName != "" {
		return *a.SecretName
	}
	return CheckName(cluster.Name)
}

// SetTokenAuthEnv configures one container for Ray token authentication:
// the mounted ServiceAccount token under Kubernetes token authentication,
// else the cluster's shared token Secret. What the user set is kept.
func SetTokenAuthEnv(c *corev1.Container, cluster *rayv1.RayCluster) {
	c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayAuthMode, Value: string(rayv1.AuthModeToken)})
	if k8sTokenAuthEnabled(&cluster.Spec) {
		c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayEnableK8sTokenAuth, Value: "true"})
		for _, m := range c.VolumeMounts {
			if m.Name == rayTokenVolumeName {
				return
			}
		}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: rayTokenVolumeName, MountPath: rayTokenMountPath, ReadOnly: true})
		return
	}
	c.Env = addEnvIfMissing(c.Env, corev1.EnvVar{Name: EnvRayAuthToken, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: AuthSecretName(cluster)},
			Key:                  AuthTokenSecretKey,
		},
	}})
}

// configureTokenAuth applies token authentication to the Ray container and
// the wait-gcs-ready init container (its health check must authenticate).
func configureTokenAuth(cluster *rayv1.RayCluster, spec *corev1.PodSpec) {
	if !AuthEnabled(&cluster.Spec) {
		return
	}
	SetTokenAuthEnv(&spec.Containers[0], cluster)
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == WaitGCSReadyContainerName {
			SetTokenAuthEnv(&spec.InitContainers[i], cluster)
		}
	}
	if k8sTokenAuthEnabled(&cluster.Spec) {
		AddTokenVolume(spec)
	}
}

// AddTokenVolume adds the projected ServiceAccount token volume that
// Kubernetes token authentication mounts, unless the Pod has a volume of
// that name.
func AddTokenVolume(spec *corev1.PodSpec) {
	if hasVolume(spec.Volumes, rayTokenVolumeName) {
		return
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{
		Name: rayTokenVolumeName,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
		}},
	})
}
