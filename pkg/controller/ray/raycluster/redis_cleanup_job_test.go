package raycluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

func TestBuildRedisCleanupJob(t *testing.T) {
	tests := []struct {
		name         string
		cluster      *raytesting.RayClusterWrapper
		wantName     string
		wantUsername bool
	}{
		{
			name:     "password only",
			cluster:  raytesting.MakeRayCluster("rc", "ns").GCSFaultTolerance("redis:6379").RedisPasswordFromSecret("redis", "pw"),
			wantName: "rc-redis-cleanup",
		},
		{
			name:         "with username",
			cluster:      raytesting.MakeRayCluster("rc", "ns").GCSFaultTolerance("redis:6379").RedisUsername("ray"),
			wantName:     "rc-redis-cleanup",
			wantUsername: true,
		},
		{
			name:     "long name cut to 63",
			cluster:  raytesting.MakeRayCluster(strings.Repeat("c", 53), "ns").GCSFaultTolerance("redis:6379"),
			wantName: (strings.Repeat("c", 53) + "-redis-cleanup")[:63],
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := tc.cluster.Autoscaling().
				HeadLimits(raytesting.Resources("cpu", "8", "nvidia.com/gpu", "1")).Obj()
			opts := podspec.DefaultBuildOptions()
			opts.HeadSidecarContainers = []corev1.Container{{Name: "log-shipper"}}
			job := BuildRedisCleanupJob(cluster, opts)

			if job.Name != tc.wantName || job.Namespace != "ns" || job.Kind != "Job" {
				t.Errorf("job %s %s/%s, want Job ns/%s", job.Kind, job.Namespace, job.Name, tc.wantName)
			}
			if job.Labels[rayv1.RayNodeTypeLabelKey] != string(rayv1.RedisCleanupNode) || job.Labels[rayv1.RayClusterLabelKey] != cluster.Name {
				t.Errorf("labels = %v", job.Labels)
			}
			if job.Spec.Template.Labels[rayv1.RayNodeTypeLabelKey] != string(rayv1.RedisCleanupNode) {
				t.Errorf("pod template labels = %v; the head Service must not select the cleanup Pod", job.Spec.Template.Labels)
			}
			if *job.Spec.BackoffLimit != 0 || *job.Spec.ActiveDeadlineSeconds != 300 {
				t.Errorf("backoffLimit %d activeDeadlineSeconds %d", *job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds)
			}
			if len(job.OwnerReferences) != 1 || job.OwnerReferences[0].UID != cluster.UID {
				t.Errorf("owner references = %+v", job.OwnerReferences)
			}
			spec := &job.Spec.Template.Spec
			if len(spec.Containers) != 1 || spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Fatalf("containers %d restartPolicy %q, want only the Ray container, Never", len(spec.Containers), spec.RestartPolicy)
			}
			c := &spec.Containers[0]
			if c.LivenessProbe != nil || c.ReadinessProbe != nil {
				t.Errorf("probes set on the cleanup container")
			}
			if c.Resources.Limits.Cpu().String() != "200m" || c.Resources.Limits.Memory().String() != "256Mi" || len(c.Resources.Limits) != 2 {
				t.Errorf("resources = %+v, want 200m/256Mi and no GPU", c.Resources)
			}
			if len(c.Command) != 3 || c.Command[1] != "-c" || len(c.Args) != 1 {
				t.Fatalf("command %q args %q", c.Command, c.Args)
			}
			script := c.Args[0]
			for _, part := range []string{"cleanup_redis_storage(", "os.getenv('RAY_REDIS_ADDRESS'", "storage_namespace=os.getenv('RAY_external_storage_namespace')", "sys.exit(1)"} {
				if !strings.Contains(script, part) {
					t.Errorf("script lacks %q", part)
				}
			}
			if got := strings.Contains(script, "username="); got != tc.wantUsername {
				t.Errorf("script passes username = %v, want %v", got, tc.wantUsername)
			}
			if raytesting.EnvValue(t, c, "RAY_redis_db_connect_retries") != "120" || raytesting.EnvValue(t, c, "RAY_redis_db_connect_wait_milliseconds") != "500" {
				t.Errorf("redis retry env not set")
			}
			if raytesting.EnvValue(t, c, podspec.EnvRayRedisAddress) != "redis:6379" || raytesting.EnvValue(t, c, podspec.EnvRayExternalStorageNS) != cluster.Name+"-uid" {
				t.Errorf("the cleanup needs the head's Redis address and storage namespace")
			}
		})
	}
}
