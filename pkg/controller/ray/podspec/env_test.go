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

func TestRayContainerEnv(t *testing.T) {
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	const fqdn = "rc-head-svc.ns.svc.example.org"
	tests := []struct {
		name     string
		nodeType rayv1.RayNodeType
		want     map[string]corev1.EnvVar
		wantNone []string
	}{
		{
			name:     "head",
			nodeType: rayv1.HeadNode,
			want: map[string]corev1.EnvVar{
				EnvRayClusterName:            {Name: EnvRayClusterName, ValueFrom: fieldRef("metadata.labels['ray.io/cluster']")},
				EnvRayClusterNamespace:       {Name: EnvRayClusterNamespace, ValueFrom: fieldRef("metadata.namespace")},
				EnvRayCloudInstanceID:        {Name: EnvRayCloudInstanceID, ValueFrom: fieldRef("metadata.name")},
				EnvRayNodeTypeName:           {Name: EnvRayNodeTypeName, ValueFrom: fieldRef("metadata.labels['ray.io/group']")},
				EnvRayPort:                   {Name: EnvRayPort, Value: "6379"},
				EnvRayAddress:                {Name: EnvRayAddress, Value: "127.0.0.1:6379"},
				EnvRayUsageStatsKubeRayInUse: {Name: EnvRayUsageStatsKubeRayInUse, Value: "1"},
				EnvRayUsageStatsExtraTags:    {Name: EnvRayUsageStatsExtraTags, Value: "kuberay_version=v1.6.0;kuberay_crd=RayCluster"},
				EnvRayDashboardK8sDiskUsage:  {Name: EnvRayDashboardK8sDiskUsage, Value: "1"},
				// A user value of an operator-owned variable is replaced, not duplicated.
				EnvRayCloudInstanceID + "#count": {},
			},
			wantNone: []string{EnvFQRayIP, EnvRayIP},
		},
		{
			name:     "worker",
			nodeType: rayv1.WorkerNode,
			want: map[string]corev1.EnvVar{
				EnvFQRayIP:    {Name: EnvFQRayIP, Value: fqdn},
				EnvRayIP:      {Name: EnvRayIP, Value: "rc-head-svc"},
				EnvRayAddress: {Name: EnvRayAddress, Value: fqdn + ":6379"},
				EnvRayPort:    {Name: EnvRayPort, Value: "6379"},
			},
			wantNone: []string{EnvRayUsageStatsExtraTags},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := raytesting.MakeRayCluster("rc", "ns").WorkerGroup("cpu", 1)
			stale := []corev1.EnvVar{{Name: EnvRayCloudInstanceID, Value: "stale"}}
			w.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = stale
			w.Group("cpu").Template.Spec.Containers[0].Env = stale
			opts := DefaultBuildOptions()
			opts.ClusterDomain = "example.org"
			var pod corev1.Pod
			if tc.nodeType == rayv1.HeadNode {
				pod = BuildHeadPod(w.Obj(), opts)
			} else {
				pod = BuildWorkerPod(w.Obj(), w.Group("cpu"), WorkerReplica{}, opts)
			}
			ray := &pod.Spec.Containers[0]
			for name, want := range tc.want {
				if base, ok := strings.CutSuffix(name, "#count"); ok {
					if n := countEnv(ray, base); n != 1 {
						t.Errorf("%s appears %d times", base, n)
					}
					continue
				}
				got, ok := raytesting.EnvOf(ray, name)
				if !ok {
					t.Errorf("missing env %s", name)
					continue
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("env %s (-want +got):\n%s", name, diff)
				}
			}
			for _, name := range tc.wantNone {
				if e, ok := raytesting.EnvOf(ray, name); ok {
					t.Errorf("unexpected env %+v", e)
				}
			}
		})
	}
}

func TestUserEnvDefaultsAreKept(t *testing.T) {
	w := raytesting.MakeRayCluster("rc", "default")
	w.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: EnvRayAddress, Value: "mine:1"},
		{Name: EnvRayPort, Value: "1"},
		{Name: EnvRayUsageStatsKubeRayInUse, Value: "0"},
	}
	ray := BuildHeadPod(w.Obj(), DefaultBuildOptions()).Spec.Containers[0]
	for name, want := range map[string]string{EnvRayAddress: "mine:1", EnvRayPort: "1", EnvRayUsageStatsKubeRayInUse: "0"} {
		if got := raytesting.EnvValue(t, &ray, name); got != want || countEnv(&ray, name) != 1 {
			t.Errorf("%s = %q (x%d), want the user's %q once", name, got, countEnv(&ray, name), want)
		}
	}
}

func TestGCSFaultTolerance(t *testing.T) {
	secretRef := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Key: "password",
	}}
	tests := []struct {
		name            string
		cluster         *raytesting.RayClusterWrapper
		wantAnnotations map[string]string
		wantHeadEnv     []corev1.EnvVar
		wantCmdParts    []string
		wantWorkerEnv   []corev1.EnvVar
	}{
		{
			name:            "off",
			cluster:         raytesting.MakeRayCluster("rc", "default"),
			wantAnnotations: map[string]string{rayv1.RayFTEnabledAnnotationKey: "false"},
		},
		{
			name:            "options with credentials from a Secret and a literal username",
			cluster:         raytesting.MakeRayCluster("rc", "default").UID("uid-1").GCSFaultTolerance("redis:6379").RedisPasswordFromSecret("redis", "password").RedisUsername("ray"),
			wantAnnotations: map[string]string{rayv1.RayFTEnabledAnnotationKey: "true", rayv1.RayExternalStorageNSAnnotationKey: "uid-1"},
			wantHeadEnv: []corev1.EnvVar{
				{Name: EnvRayExternalStorageNS, Value: "uid-1"},
				{Name: EnvRayRedisAddress, Value: "redis:6379"},
				{Name: EnvRedisUsername, Value: "ray"},
				{Name: EnvRedisPassword, ValueFrom: secretRef},
			},
			wantCmdParts:  []string{"--redis-password=$REDIS_PASSWORD", "--redis-username=$REDIS_USERNAME"},
			wantWorkerEnv: []corev1.EnvVar{{Name: EnvRayGCSReconnectTimeoutS, Value: "600"}},
		},
		{
			name: "options namespace wins over the annotation",
			cluster: func() *raytesting.RayClusterWrapper {
				w := raytesting.MakeRayCluster("rc", "default").GCSFaultTolerance("redis:6379").Annotation(rayv1.RayExternalStorageNSAnnotationKey, "from-annotation")
				w.Spec.GcsFaultToleranceOptions.ExternalStorageNamespace = "from-options"
				return w
			}(),
			wantAnnotations: map[string]string{rayv1.RayExternalStorageNSAnnotationKey: "from-options"},
			wantHeadEnv:     []corev1.EnvVar{{Name: EnvRayExternalStorageNS, Value: "from-options"}},
			wantWorkerEnv:   []corev1.EnvVar{{Name: EnvRayGCSReconnectTimeoutS, Value: "600"}},
		},
		{
			name: "legacy annotation with a literal redis-password",
			cluster: raytesting.MakeRayCluster("rc", "default").
				Annotation(rayv1.RayFTEnabledAnnotationKey, "True").
				Annotation(rayv1.RayExternalStorageNSAnnotationKey, "legacy").
				HeadStartParam("redis-password", "secret"),
			wantAnnotations: map[string]string{rayv1.RayFTEnabledAnnotationKey: "true", rayv1.RayExternalStorageNSAnnotationKey: "legacy"},
			wantHeadEnv:     []corev1.EnvVar{{Name: EnvRedisPassword, Value: "secret"}, {Name: EnvRayExternalStorageNS, Value: "legacy"}},
			wantCmdParts:    []string{"--redis-password=secret"},
			wantWorkerEnv:   []corev1.EnvVar{{Name: EnvRayGCSReconnectTimeoutS, Value: "600"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.cluster.WorkerGroup("cpu", 1)
			cluster := w.Obj()
			head := BuildHeadPod(cluster, DefaultBuildOptions())
			for k, v := range tc.wantAnnotations {
				if head.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, head.Annotations[k], v)
				}
			}
			ray := &head.Spec.Containers[0]
			for _, want := range tc.wantHeadEnv {
				got, ok := raytesting.EnvOf(ray, want.Name)
				if !ok || !cmp.Equal(want, got) {
					t.Errorf("head env %s = %+v, want %+v", want.Name, got, want)
				}
			}
			cmd := raytesting.EnvValue(t, ray, EnvKubeRayGenRayStartCmd)
			for _, part := range tc.wantCmdParts {
				if !strings.Contains(cmd, part) {
					t.Errorf("head command %q lacks %q", cmd, part)
				}
			}
			worker := BuildWorkerPod(cluster, w.Group("cpu"), WorkerReplica{}, DefaultBuildOptions())
			if _, ok := worker.Annotations[rayv1.RayFTEnabledAnnotationKey]; ok {
				t.Errorf("ft-enabled annotation on a worker")
			}
			for _, want := range tc.wantWorkerEnv {
				if got, ok := raytesting.EnvOf(&worker.Spec.Containers[0], want.Name); !ok || !cmp.Equal(want, got) {
					t.Errorf("worker env %s = %+v, want %+v", want.Name, got, want)
				}
			}
			if len(tc.wantWorkerEnv) == 0 {
				if _, ok := raytesting.EnvOf(&worker.Spec.Containers[0], EnvRayGCSReconnectTimeoutS); ok {
					t.Errorf("GCS reconnect timeout set without fault tolerance")
				}
			}
		})
	}
}

func TestTokenAuth(t *testing.T) {
	tests := []struct {
		name          string
		auth          *rayv1.AuthOptions
		wantMode      bool
		wantSecret    string
		wantK8sVolume bool
	}{
		{name: "no auth options"},
		{name: "disabled", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled}},
		// KubeRay v1.6.2 utils.IsAuthEnabled: only mode token turns auth on.
		{name: "empty mode is not token", auth: &rayv1.AuthOptions{}},
		{name: "token", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}, wantMode: true, wantSecret: "rc"},
		{name: "own secret", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("mine")}, wantMode: true, wantSecret: "mine"},
		{name: "kubernetes tokens", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}, wantMode: true, wantK8sVolume: true},
		{name: "kubernetes tokens without mode token", auth: &rayv1.AuthOptions{EnableK8sTokenAuth: ptr.To(true)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := raytesting.MakeRayCluster("rc", "default").Auth(tc.auth).Autoscaling().WorkerGroup("cpu", 1)
			cluster := w.Obj()
			head := BuildHeadPod(cluster, DefaultBuildOptions())
			worker := BuildWorkerPod(cluster, w.Group("cpu"), WorkerReplica{}, DefaultBuildOptions())
			containers := map[string]*corev1.Container{
				"head ray":       &head.Spec.Containers[0],
				"autoscaler":     &head.Spec.Containers[ContainerIndex(head.Spec.Containers, AutoscalerContainerName)],
				"worker ray":     &worker.Spec.Containers[0],
				"wait-gcs-ready": &worker.Spec.InitContainers[0],
			}
			for name, c := range containers {
				mode, hasMode := raytesting.EnvOf(c, EnvRayAuthMode)
				if hasMode != tc.wantMode || (hasMode && mode.Value != "token") {
					t.Errorf("%s: RAY_AUTH_MODE = %+v, want set=%v", name, mode, tc.wantMode)
				}
				token, hasToken := raytesting.EnvOf(c, EnvRayAuthToken)
				if (tc.wantSecret != "") != hasToken {
					t.Errorf("%s: RAY_AUTH_TOKEN set = %v, want %v", name, hasToken, tc.wantSecret != "")
				} else if hasToken && (token.ValueFrom.SecretKeyRef.Name != tc.wantSecret || token.ValueFrom.SecretKeyRef.Key != "auth_token") {
					t.Errorf("%s: token from %+v, want secret %s key auth_token", name, token.ValueFrom.SecretKeyRef, tc.wantSecret)
				}
				_, hasK8s := raytesting.EnvOf(c, EnvRayEnableK8sTokenAuth)
				if hasK8s != tc.wantK8sVolume {
					t.Errorf("%s: RAY_ENABLE_K8S_TOKEN_AUTH set = %v, want %v", name, hasK8s, tc.wantK8sVolume)
				}
			}
			for _, pod := range []*corev1.Pod{&head, &worker} {
				if got := hasVolume(pod.Spec.Volumes, rayTokenVolumeName); got != tc.wantK8sVolume {
					t.Errorf("%s: ray-token volume = %v, want %v", pod.GenerateName, got, tc.wantK8sVolume)
				}
			}
		})
	}
}
