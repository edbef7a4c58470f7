package raycluster

import (
	"maps"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
)

// redisCleanupDeadlineSeconds bounds the cleanup: it is best effort, and the
// finalizer is removed whether it succeeds or not.
const redisCleanupDeadlineSeconds = 300

// RedisCleanupJobName is "<cluster>-redis-cleanup", cut to 63 characters.
func RedisCleanupJobName(cluster *rayv1.RayCluster) string {
	name := cluster.Name + "-redis-cleanup"
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}

// redisCleanupScript deletes the cluster's keys from Redis with Ray's own
// helper, reading the address, credentials and namespace from the env vars
// the head Pod already carries. A failed cleanup exits 1 so the Job (and the
// event about it) shows the failure.
func redisCleanupScript(withUsername bool) string {
	username := ""
	if withUsername {
		username = "username=os.getenv('REDIS_USERNAME', parsed.username), "
	}
	return `echo "To delete the storage namespace in Redis by hand and remove the RayCluster's finalizer, see https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html." && ` +
		`python -c "` +
		`from ray._private.gcs_utils import cleanup_redis_storage; ` +
		`from urllib.parse import urlparse; ` +
		`import os; import sys; ` +
		`redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; ` +
		`redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; ` +
		`parsed = urlparse(redis_address); ` +
		`sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, ` + username +
		`password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', ` +
		`storage_namespace=os.getenv('RAY_external_storage_namespace')) else None"`
}

// BuildRedisCleanupJob returns the Job that removes a deleted GCS
// fault-tolerant cluster's state from Redis. It starts from the head Pod so
// it has the same image, Redis settings, credentials and scheduling
// constraints, keeps only the Ray container, and runs no Ray processes (no
// probes, small fixed resources, no GPU).
func BuildRedisCleanupJob(cluster *rayv1.RayCluster, opts podspec.BuildOptions) batchv1.Job {
	// The cleanup needs neither the autoscaler nor sidecars.
	opts.HeadSidecarContainers = nil
	// Nor the batch scheduler's gang: its PodGroup, task groups and queue
	// belong to the cluster being deleted, and a Pod waiting for that gang
	// is never scheduled. As in KubeRay v1.7.0, whose cleanup Job comes
	// from buildHeadPod while the scheduler's metadata is added in
	// createHeadPod only; the head template's own schedulerName stays.
	opts.BatchScheduler = ""
	pod := podspec.BuildHeadPod(cluster, opts)
	pod.Labels[rayv1.RayNodeTypeLabelKey] = string(rayv1.RedisCleanupNode)

	ray := pod.Spec.Containers[0]
	ray.Command = opts.ContainerCommand()
	ray.Args = []string{redisCleanupScript(podspec.HasEnv(ray.Env, podspec.EnvRedisUsername))}
	ray.LivenessProbe, ray.ReadinessProbe = nil, nil
	// Ray's Redis client gives up after ~10s by default; the cleanup should
	// wait at least a minute for Redis to come back.
	ray.Env = podspec.SetEnv(ray.Env, corev1.EnvVar{Name: "RAY_redis_db_connect_retries", Value: "120"})
	ray.Env = podspec.SetEnv(ray.Env, corev1.EnvVar{Name: "RAY_redis_db_connect_wait_milliseconds", Value: "500"})
	// KubeRay v1.7.0 still hard-codes 200m and 256Mi as both requests and
	// limits (ray-project/kuberay#4721 is about admission that wants more,
	// GKE Autopilot's); a Job refused is bounded by the deletion timeout.
	fixed := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("200m"),
		corev1.ResourceMemory: resource.MustParse("256Mi"),
	}
	ray.Resources = corev1.ResourceRequirements{Limits: fixed, Requests: fixed.DeepCopy()}
	pod.Spec.Containers = []corev1.Container{ray}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever

	return batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            RedisCleanupJobName(cluster),
			Namespace:       cluster.Namespace,
			Labels:          pod.Labels,
			Annotations:     pod.Annotations,
			OwnerReferences: pod.OwnerReferences,
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To[int64](redisCleanupDeadlineSeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      maps.Clone(pod.Labels),
					Annotations: maps.Clone(pod.Annotations),
				},
				Spec: pod.Spec,
			},
		},
	}
}
