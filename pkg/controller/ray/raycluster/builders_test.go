package raycluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/version"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// richCluster sets every field the builders read, so the purity test
// exercises every code path that could write through a shared pointer.
func richCluster() *raytesting.RayClusterWrapper {
	w := raytesting.MakeRayCluster("rc", "ns").
		Autoscaling().
		AutoscalerOptions(&rayv1.AutoscalerOptions{
			Env:          []corev1.EnvVar{{Name: "A", Value: "1"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}},
			Resources:    &corev1.ResourceRequirements{Limits: raytesting.Resources("cpu", "1")},
		}).
		GCSFaultTolerance("redis:6379").RedisPasswordFromSecret("redis", "password").RedisUsername("ray").
		Auth(&rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}).
		UpgradeStrategy(rayv1.RayClusterRecreate).
		HeadResources(map[string]string{"cpu": "2", "custom": "1"}).
		HeadLimits(raytesting.Resources("cpu", "2", "memory", "4Gi")).
		HeadPort("serve", 8000).
		HeadServiceAnnotation("a", "b").
		HeadService(&corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "extra", Port: 1}}}}).
		Annotation(rayv1.EnableServeServiceKey, "true").
		WorkerGroup("cpu", 2).
		WorkerLabels("cpu", map[string]string{"zone": "a"}).
		MultiHostWorkerGroup("tpu", 1, 2).
		WorkerLimits("tpu", raytesting.Resources("google.com/tpu", "4"))
	w.Spec.HeadGroupSpec.Template.Spec.InitContainers = []corev1.Container{{Name: "user-init"}}
	return w
}

func TestBuildersDoNotMutateTheCluster(t *testing.T) {
	w := richCluster()
	cluster := w.Obj()
	before := cluster.DeepCopy()
	opts := podspec.DefaultBuildOptions()
	opts.HeadSidecarContainers = []corev1.Container{{Name: "side", Env: []corev1.EnvVar{{Name: "X"}}}}
	opts.DefaultContainerEnvs = []corev1.EnvVar{{Name: "D", Value: "1"}}
	optsBefore := opts
	sidecarBefore := opts.HeadSidecarContainers[0].DeepCopy()

	head := podspec.BuildHeadPod(cluster, opts)
	for _, g := range cluster.Spec.WorkerGroupSpecs {
		worker := podspec.BuildWorkerPod(cluster, &g, podspec.WorkerReplica{Name: "x", Index: 0, HostIndex: 1}, opts)
		// Writing to a built object must not reach the cluster either.
		worker.Spec.Containers[0].Env[0].Value = "scribbled"
		worker.Labels["scribbled"] = "yes"
	}
	head.Spec.Containers[0].Ports[0].ContainerPort = 1
	svc := podspec.BuildHeadService(cluster, opts)
	svc.Spec.Ports[0].Port = 1
	svc.Annotations["scribbled"] = "yes"
	podspec.BuildHeadlessService(cluster)
	if _, err := podspec.BuildServeService(cluster); err != nil {
		t.Fatalf("podspec.BuildServeService: %v", err)
	}
	BuildAutoscalerRBAC(cluster)
	job := BuildRedisCleanupJob(cluster, opts)
	job.Spec.Template.Spec.Containers[0].Env[0].Value = "scribbled"

	if !equality.Semantic.DeepEqual(before, cluster) {
		t.Errorf("builders modified the RayCluster:\n%s", cmp.Diff(before, cluster))
	}
	if !equality.Semantic.DeepEqual(sidecarBefore, &opts.HeadSidecarContainers[0]) || opts.OperatorVersion != optsBefore.OperatorVersion {
		t.Errorf("builders modified the options")
	}
}

func TestManagedByOnEveryObject(t *testing.T) {
	w := richCluster()
	cluster := w.Obj()
	opts := podspec.DefaultBuildOptions()
	serve, err := podspec.BuildServeService(cluster)
	if err != nil {
		t.Fatal(err)
	}
	rbac := BuildAutoscalerRBAC(cluster)
	job := BuildRedisCleanupJob(cluster, opts)
	secret, err := BuildAuthSecret(cluster)
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]map[string]string{
		"ingress":           BuildHeadIngress(cluster).Labels,
		"auth secret":       secret.Labels,
		"head pod":          podspec.BuildHeadPod(cluster, opts).Labels,
		"worker pod":        ptr.To(podspec.BuildWorkerPod(cluster, w.Group("cpu"), podspec.WorkerReplica{}, opts)).Labels,
		"head service":      podspec.BuildHeadService(cluster, opts).Labels,
		"headless service":  podspec.BuildHeadlessService(cluster).Labels,
		"serve service":     serve.Labels,
		"service account":   rbac.ServiceAccount.Labels,
		"role":              rbac.Role.Labels,
		"role binding":      rbac.RoleBinding.Labels,
		"cleanup job":       job.Labels,
		"cleanup job's pod": job.Spec.Template.Labels,
	}
	for name, labels := range objects {
		if labels[builder.LabelManagedBy] != builder.ManagedByGantry {
			t.Errorf("%s has no %s=%s label: %v", name, builder.LabelManagedBy, builder.ManagedByGantry, labels)
		}
	}
}

// ConfigFromEnv's pod options carry the build's version (see podspec's
// TestOperatorVersionIsTheBuildVersion). It reads version.Version and does not
// set it: this test binary also runs the manager (TestMain), which reads it.
func TestConfigFromEnvCarriesTheBuildVersion(t *testing.T) {
	if version.Version == "" {
		t.Fatal("version.Version is empty; the test needs a non-empty build version")
	}
	if got := ConfigFromEnv(func(string) string { return "" }, nil).Build.OperatorVersion; got != version.Version {
		t.Errorf("ConfigFromEnv OperatorVersion = %q, want the build's %q", got, version.Version)
	}
}
