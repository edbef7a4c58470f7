package raycluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

func mountsAt(c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

func TestAutoscalerSidecar(t *testing.T) {
	cluster := raytesting.MakeRayCluster("rc", "default").Autoscaling().Obj()
	pod := BuildHeadPod(cluster, DefaultBuildOptions())

	if n := len(pod.Spec.Containers); n != 2 {
		t.Fatalf("head has %d containers, want Ray and the autoscaler", n)
	}
	as := &pod.Spec.Containers[1]
	ray := &pod.Spec.Containers[0]
	if as.Name != "autoscaler" || as.Image != ray.Image || as.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("autoscaler = name %q image %q pull %q, want the Ray image", as.Name, as.Image, as.ImagePullPolicy)
	}
	if diff := cmp.Diff([]string{"/bin/bash", "-c", "--"}, as.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if len(as.Args) != 1 || !strings.HasPrefix(as.Args[0], "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME)") {
		t.Errorf("args = %q", as.Args)
	}
	if e, ok := envOf(as, EnvRayClusterName); !ok || e.ValueFrom.FieldRef.FieldPath != "metadata.labels['ray.io/cluster']" {
		t.Errorf("RAY_CLUSTER_NAME = %+v", e)
	}
	if as.Resources.Limits.Cpu().String() != "500m" || as.Resources.Requests.Memory().String() != "512Mi" {
		t.Errorf("resources = %+v, want 500m/512Mi", as.Resources)
	}
	if pod.Spec.ServiceAccountName != "rc" {
		t.Errorf("serviceAccountName = %q, want rc", pod.Spec.ServiceAccountName)
	}
	if gen := envValue(t, ray, EnvKubeRayGenRayStartCmd); !strings.Contains(gen, " --no-monitor") {
		t.Errorf("command %q does not turn Ray's monitor off", gen)
	}
	if !mountsAt(ray, "/tmp/ray") || !mountsAt(as, "/tmp/ray") || !hasVolume(pod.Spec.Volumes, "ray-logs") {
		t.Errorf("Ray and autoscaler must share /tmp/ray through the ray-logs volume")
	}

	without := BuildHeadPod(raytesting.MakeRayCluster("rc", "default").Obj(), DefaultBuildOptions())
	if len(without.Spec.Containers) != 1 || hasVolume(without.Spec.Volumes, "ray-logs") || without.Spec.ServiceAccountName != "" {
		t.Errorf("autoscaler parts present without enableInTreeAutoscaling")
	}
}

func TestAutoscalerOverrides(t *testing.T) {
	cluster := raytesting.MakeRayCluster("rc", "default").Autoscaling().HeadServiceAccount("my-sa").
		AutoscalerOptions(&rayv1.AutoscalerOptions{
			Image:           ptr.To("my/autoscaler:1"),
			ImagePullPolicy: ptr.To(corev1.PullAlways),
			Resources:       &corev1.ResourceRequirements{Limits: raytesting.Resources("cpu", "1")},
			Env:             []corev1.EnvVar{{Name: "EXTRA", Value: "1"}},
			EnvFrom:         []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
			VolumeMounts:    []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}},
			SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
		}).Obj()
	pod := BuildHeadPod(cluster, DefaultBuildOptions())
	as := &pod.Spec.Containers[containerIndex(pod.Spec.Containers, AutoscalerContainerName)]

	if as.Image != "my/autoscaler:1" || as.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %q pull %q", as.Image, as.ImagePullPolicy)
	}
	if as.Resources.Limits.Cpu().String() != "1" || as.Resources.Requests != nil {
		t.Errorf("resources = %+v, want the user's exactly", as.Resources)
	}
	if envValue(t, as, "EXTRA") != "1" || envValue(t, as, "KUBERAY_CRD_VER") != "v1" {
		t.Errorf("env = %+v, want user env added to the defaults", as.Env)
	}
	if len(as.EnvFrom) != 1 || !mountsAt(as, "/tls") || !mountsAt(as, "/tmp/ray") {
		t.Errorf("envFrom %+v mounts %+v", as.EnvFrom, as.VolumeMounts)
	}
	if as.SecurityContext == nil || !ptr.Deref(as.SecurityContext.RunAsNonRoot, false) {
		t.Errorf("securityContext = %+v", as.SecurityContext)
	}
	if pod.Spec.ServiceAccountName != "my-sa" {
		t.Errorf("serviceAccountName = %q, want the template's my-sa", pod.Spec.ServiceAccountName)
	}
}

func TestAutoscalerVersion(t *testing.T) {
	tests := []struct {
		name        string
		rayVersion  string
		version     *rayv1.AutoscalerVersion
		wantEnv     string // "" = not set
		wantRestart corev1.RestartPolicy
	}{
		{name: "Ray before 2.47 defaults to v1", rayVersion: "2.46.0", wantEnv: "false"},
		{name: "Ray 2.47 defaults to v2", rayVersion: "2.47.0", wantEnv: "true", wantRestart: corev1.RestartPolicyNever},
		{name: "explicit v1 on new Ray", rayVersion: "2.50.1", version: ptr.To(rayv1.AutoscalerVersionV1), wantEnv: "false"},
		{name: "explicit v2 on old Ray", rayVersion: "2.40.0", version: ptr.To(rayv1.AutoscalerVersionV2), wantEnv: "true", wantRestart: corev1.RestartPolicyNever},
		{name: "unknown Ray version leaves it to Ray", rayVersion: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := raytesting.MakeRayCluster("rc", "default").RayVersion(tc.rayVersion).Autoscaling().WorkerGroup("cpu", 1)
			if tc.version != nil {
				w.AutoscalerOptions(&rayv1.AutoscalerOptions{Version: tc.version})
			}
			cluster := w.Obj()
			head := BuildHeadPod(cluster, DefaultBuildOptions())
			worker := BuildWorkerPod(cluster, w.Group("cpu"), WorkerReplica{}, DefaultBuildOptions())

			e, ok := envOf(&head.Spec.Containers[0], EnvRayEnableAutoscalerV2)
			if got := map[bool]string{true: e.Value}[ok]; got != tc.wantEnv {
				t.Errorf("%s = %q, want %q", EnvRayEnableAutoscalerV2, got, tc.wantEnv)
			}
			if head.Spec.RestartPolicy != tc.wantRestart || worker.Spec.RestartPolicy != tc.wantRestart {
				t.Errorf("restartPolicy head %q worker %q, want %q", head.Spec.RestartPolicy, worker.Spec.RestartPolicy, tc.wantRestart)
			}
		})
	}
}
