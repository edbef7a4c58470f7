package podspec

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
	if e, ok := raytesting.EnvOf(as, EnvRayClusterName); !ok || e.ValueFrom.FieldRef.FieldPath != "metadata.labels['ray.io/cluster']" {
		t.Errorf("RAY_CLUSTER_NAME = %+v", e)
	}
	// KubeRay v1.7.0: the generated command is also in the env, for custom
	// args to run.
	if got := raytesting.EnvValue(t, as, "KUBERAY_GEN_AUTOSCALER_START_CMD"); got != as.Args[0] {
		t.Errorf("KUBERAY_GEN_AUTOSCALER_START_CMD = %q, want the generated args %q", got, as.Args[0])
	}
	if as.Resources.Limits.Cpu().String() != "500m" || as.Resources.Requests.Memory().String() != "512Mi" {
		t.Errorf("resources = %+v, want 500m/512Mi", as.Resources)
	}
	if pod.Spec.ServiceAccountName != "rc" {
		t.Errorf("serviceAccountName = %q, want rc", pod.Spec.ServiceAccountName)
	}
	if gen := raytesting.EnvValue(t, ray, EnvKubeRayGenRayStartCmd); !strings.Contains(gen, " --no-monitor") {
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
	as := &pod.Spec.Containers[ContainerIndex(pod.Spec.Containers, AutoscalerContainerName)]

	if as.Image != "my/autoscaler:1" || as.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %q pull %q", as.Image, as.ImagePullPolicy)
	}
	if as.Resources.Limits.Cpu().String() != "1" || as.Resources.Requests != nil {
		t.Errorf("resources = %+v, want the user's exactly", as.Resources)
	}
	if raytesting.EnvValue(t, as, "EXTRA") != "1" || raytesting.EnvValue(t, as, "KUBERAY_CRD_VER") != "v1" {
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

// TestAutoscalerCommandAndArgs: KubeRay v1.7.0's autoscalerOptions.command
// and args replace the container's, each only when set; the generated start
// command stays reachable as $KUBERAY_GEN_AUTOSCALER_START_CMD.
func TestAutoscalerCommandAndArgs(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		command, args        []string
		wantCommand, wantArg []string
	}{
		{name: "args only", args: []string{"ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD"},
			wantCommand: []string{"/bin/bash", "-c", "--"}, wantArg: []string{"ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD"}},
		{name: "command only", command: []string{"/bin/sh", "-c"},
			wantCommand: []string{"/bin/sh", "-c"}, wantArg: []string{autoscalerStartCommand}},
		{name: "both", command: []string{"python"}, args: []string{"-m", "my.autoscaler"},
			wantCommand: []string{"python"}, wantArg: []string{"-m", "my.autoscaler"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := raytesting.MakeRayCluster("rc", "default").Autoscaling().
				AutoscalerOptions(&rayv1.AutoscalerOptions{Command: tc.command, Args: tc.args}).Obj()
			pod := BuildHeadPod(cluster, DefaultBuildOptions())
			as := &pod.Spec.Containers[ContainerIndex(pod.Spec.Containers, AutoscalerContainerName)]
			if diff := cmp.Diff(tc.wantCommand, as.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantArg, as.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if got := raytesting.EnvValue(t, as, EnvAutoscalerStartCmd); got != autoscalerStartCommand {
				t.Errorf("%s = %q, want %q", EnvAutoscalerStartCmd, got, autoscalerStartCommand)
			}
		})
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
		// KubeRay v1.6.2 sets RAY_enable_autoscaler_v2 and restartPolicy
		// only for autoscalerOptions.version v2 (utils.IsAutoscalingV2Enabled);
		// without it Ray picks its own default.
		{name: "Ray before 2.47 without version: nothing set", rayVersion: "2.46.0"},
		{name: "Ray 2.47 without version: nothing set", rayVersion: "2.47.0"},
		{name: "explicit v1 on new Ray: nothing set", rayVersion: "2.50.1", version: ptr.To(rayv1.AutoscalerVersionV1)},
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

			e, ok := raytesting.EnvOf(&head.Spec.Containers[0], EnvRayEnableAutoscalerV2)
			if got := map[bool]string{true: e.Value}[ok]; got != tc.wantEnv {
				t.Errorf("%s = %q, want %q", EnvRayEnableAutoscalerV2, got, tc.wantEnv)
			}
			if head.Spec.RestartPolicy != tc.wantRestart || worker.Spec.RestartPolicy != tc.wantRestart {
				t.Errorf("restartPolicy head %q worker %q, want %q", head.Spec.RestartPolicy, worker.Spec.RestartPolicy, tc.wantRestart)
			}
		})
	}
}

// TestAutoscalerV2OnlyWhenRequested follows KubeRay v1.6.2: autoscaler v2
// is utils.IsAutoscalingV2Enabled, autoscalerOptions.version == v2 and
// nothing else (not the Ray version). Only then, with autoscaling on, does
// the operator set RAY_enable_autoscaler_v2=true on the head's Ray
// container and restartPolicy Never on head and worker Pods; otherwise it
// sets neither and Ray picks its own default. A restartPolicy the user set
// is never replaced, on the Pod or on a container.
func TestAutoscalerV2OnlyWhenRequested(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name        string
		rayVersion  string
		autoscaling bool
		version     *rayv1.AutoscalerVersion
		userEnv     string // RAY_enable_autoscaler_v2 on the head, "" = unset
		userRestart corev1.RestartPolicy
		wantEnv     string // "" = not set
		wantRestart corev1.RestartPolicy
	}{
		{name: "Ray 2.47 without version", rayVersion: "2.47.0", autoscaling: true},
		{name: "Ray 2.52 without version", rayVersion: "2.52.0", autoscaling: true},
		{name: "explicit v1", rayVersion: "2.50.1", autoscaling: true, version: ptr.To(rayv1.AutoscalerVersionV1)},
		{name: "explicit v2", rayVersion: "2.40.0", autoscaling: true, version: ptr.To(rayv1.AutoscalerVersionV2),
			wantEnv: "true", wantRestart: corev1.RestartPolicyNever},
		{name: "explicit v2, user's Never", rayVersion: "2.52.0", autoscaling: true, version: ptr.To(rayv1.AutoscalerVersionV2),
			userRestart: corev1.RestartPolicyNever, wantEnv: "true", wantRestart: corev1.RestartPolicyNever},
		{name: "v2 without autoscaling", rayVersion: "2.52.0", version: ptr.To(rayv1.AutoscalerVersionV2)},
		{name: "user's env var, no version", rayVersion: "2.52.0", autoscaling: true, userEnv: "true", wantEnv: "true"},
		{name: "user's restartPolicy without v2", rayVersion: "2.52.0", autoscaling: true,
			userRestart: corev1.RestartPolicyOnFailure, wantRestart: corev1.RestartPolicyOnFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := raytesting.MakeRayCluster("rc", "default").RayVersion(tc.rayVersion).WorkerGroup("cpu", 1)
			if tc.autoscaling {
				w.Autoscaling()
			}
			if tc.version != nil {
				w.AutoscalerOptions(&rayv1.AutoscalerOptions{Version: tc.version})
			}
			if tc.userEnv != "" {
				w.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: EnvRayEnableAutoscalerV2, Value: tc.userEnv}}
			}
			// A native sidecar: its container restartPolicy is the user's.
			sidecar := corev1.Container{Name: "log-shipper", Image: "busybox", RestartPolicy: &always}
			for _, spec := range []*corev1.PodSpec{&w.Spec.HeadGroupSpec.Template.Spec, &w.Group("cpu").Template.Spec} {
				spec.RestartPolicy = tc.userRestart
				spec.InitContainers = append(spec.InitContainers, sidecar)
			}
			cluster := w.Obj()
			head := BuildHeadPod(cluster, DefaultBuildOptions())
			worker := BuildWorkerPod(cluster, w.Group("cpu"), WorkerReplica{}, DefaultBuildOptions())

			e, ok := raytesting.EnvOf(&head.Spec.Containers[0], EnvRayEnableAutoscalerV2)
			if got := map[bool]string{true: e.Value}[ok]; got != tc.wantEnv {
				t.Errorf("%s = %q, want %q", EnvRayEnableAutoscalerV2, got, tc.wantEnv)
			}
			if n := countEnv(&head.Spec.Containers[0], EnvRayEnableAutoscalerV2); n > 1 {
				t.Errorf("%s set %d times", EnvRayEnableAutoscalerV2, n)
			}
			if head.Spec.RestartPolicy != tc.wantRestart || worker.Spec.RestartPolicy != tc.wantRestart {
				t.Errorf("restartPolicy head %q worker %q, want %q", head.Spec.RestartPolicy, worker.Spec.RestartPolicy, tc.wantRestart)
			}
			for _, pod := range []*corev1.Pod{&head, &worker} {
				i := ContainerIndex(pod.Spec.InitContainers, "log-shipper")
				if i < 0 || pod.Spec.InitContainers[i].RestartPolicy == nil || *pod.Spec.InitContainers[i].RestartPolicy != always {
					t.Errorf("%s: the sidecar's restartPolicy was changed: %+v", pod.GenerateName, pod.Spec.InitContainers)
				}
			}
		})
	}
}
