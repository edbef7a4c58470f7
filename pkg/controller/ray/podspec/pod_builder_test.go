package podspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/version"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

func countEnv(c *corev1.Container, name string) int {
	n := 0
	for _, e := range c.Env {
		if e.Name == name {
			n++
		}
	}
	return n
}

func TestBuildHeadPodMetadata(t *testing.T) {
	cluster := raytesting.MakeRayCluster("rc", "ns").HeadTemplateLabel("team", "ml").Obj()
	pod := BuildHeadPod(cluster, DefaultBuildOptions())

	if pod.GenerateName != "rc-head-" || pod.Name != "" || pod.Namespace != "ns" {
		t.Errorf("name = %q/%q generateName %q, want generateName rc-head- in ns", pod.Namespace, pod.Name, pod.GenerateName)
	}
	if pod.Kind != "Pod" || pod.APIVersion != "v1" {
		t.Errorf("TypeMeta = %+v", pod.TypeMeta)
	}
	wantLabels := map[string]string{
		"ray.io/cluster":               "rc",
		"ray.io/node-type":             "head",
		"ray.io/group":                 "headgroup",
		"ray.io/is-ray-node":           "yes",
		"ray.io/identifier":            "rc-head",
		"app.kubernetes.io/name":       "kuberay",
		"app.kubernetes.io/created-by": "kuberay-operator",
		"app.kubernetes.io/managed-by": "gantry",
		"team":                         "ml",
	}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].Kind != "RayCluster" ||
		pod.OwnerReferences[0].UID != cluster.UID || !ptr.Deref(pod.OwnerReferences[0].Controller, false) {
		t.Errorf("owner references = %+v, want the RayCluster as controller", pod.OwnerReferences)
	}
	if got := pod.Annotations[rayv1.RayFTEnabledAnnotationKey]; got != "false" {
		t.Errorf("ft-enabled annotation = %q, want false", got)
	}
}

func TestPodLabelsOperatorKeysWin(t *testing.T) {
	w := raytesting.MakeRayCluster("rc", "default").WorkerGroup("cpu", 1)
	tmpl := &w.Group("cpu").Template
	tmpl.Labels = map[string]string{
		"ray.io/cluster":               "other",
		"ray.io/node-type":             "head",
		"ray.io/group":                 "gpu",
		"app.kubernetes.io/managed-by": "someone-else",
		"ray.io/identifier":            "custom-id",
		"mine":                         "yes",
	}
	w.WorkerLabels("cpu", map[string]string{"mine": "from-group"})
	cluster := w.Obj()
	pod := BuildWorkerPod(cluster, w.Group("cpu"), WorkerReplica{}, DefaultBuildOptions())

	want := map[string]string{
		"ray.io/cluster":               "rc",
		"ray.io/node-type":             "worker",
		"ray.io/group":                 "cpu",
		"app.kubernetes.io/managed-by": "gantry",
		// KubeRay lets users override these.
		"ray.io/identifier": "custom-id",
		// Group Ray node labels win over template labels.
		"mine": "from-group",
	}
	for k, v := range want {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
}

func TestRayContainerCommand(t *testing.T) {
	const ulimit = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; "
	tests := []struct {
		name        string
		command     []string
		args        []string
		overwrite   bool
		loginShell  bool
		wantCommand []string
		wantArgs    []string
	}{
		{
			name:        "generated command",
			wantCommand: []string{"/bin/bash", "-c", "--"},
			wantArgs:    []string{ulimit + "GEN"},
		},
		{
			name:        "login shell",
			loginShell:  true,
			wantCommand: []string{"/bin/bash", "-lc", "--"},
			wantArgs:    []string{ulimit + "GEN"},
		},
		{
			name:        "a user command runs before ray start",
			command:     []string{"pip", "install", "x"},
			wantCommand: []string{"/bin/bash", "-c", "--"},
			wantArgs:    []string{"pip install x && " + ulimit + "GEN"},
		},
		{
			name:        "a user command that starts ray is kept",
			command:     []string{"/bin/sh", "-c"},
			args:        []string{"ray start --head --block"},
			wantCommand: []string{"/bin/sh", "-c"},
			wantArgs:    []string{"ray start --head --block"},
		},
		{
			name:        "the overwrite annotation keeps the user command",
			command:     []string{"my-entrypoint"},
			overwrite:   true,
			wantCommand: []string{"my-entrypoint"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := raytesting.MakeRayCluster("rc", "default")
			c := &w.Spec.HeadGroupSpec.Template.Spec.Containers[0]
			c.Command, c.Args = tc.command, tc.args
			if tc.overwrite {
				w.Annotation(rayv1.RayOverwriteContainerCmdAnnotationKey, "True")
			}
			opts := DefaultBuildOptions()
			opts.LoginShell = tc.loginShell
			pod := BuildHeadPod(w.Obj(), opts)
			ray := &pod.Spec.Containers[0]

			gen := raytesting.EnvValue(t, ray, EnvKubeRayGenRayStartCmd)
			if !strings.HasPrefix(gen, "ray start --head ") || !strings.Contains(gen, " --block") {
				t.Errorf("KUBERAY_GEN_RAY_START_CMD = %q", gen)
			}
			wantArgs := make([]string, len(tc.wantArgs))
			for i, a := range tc.wantArgs {
				wantArgs[i] = strings.ReplaceAll(a, "GEN", gen)
			}
			if diff := cmp.Diff(tc.wantCommand, ray.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantArgs, ray.Args, cmp.Comparer(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if tc.overwrite && pod.Annotations[rayv1.RayOverwriteContainerCmdAnnotationKey] != "true" {
				t.Errorf("overwrite annotation not copied to the Pod: %v", pod.Annotations)
			}
		})
	}
}

func TestHeadPodVolumesAndPorts(t *testing.T) {
	tests := []struct {
		name          string
		cluster       *rayv1.RayCluster
		wantShm       bool
		wantSizeLimit *resource.Quantity
		wantPorts     []corev1.ContainerPort
	}{
		{
			name:          "shared memory capped at the memory limit; metrics port added",
			cluster:       raytesting.MakeRayCluster("rc", "default").HeadLimits(raytesting.Resources("cpu", "1", "memory", "2Gi")).Obj(),
			wantShm:       true,
			wantSizeLimit: ptr.To(resource.MustParse("2Gi")),
			wantPorts:     []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}},
		},
		{
			name:      "no memory set: unbounded shared memory",
			cluster:   raytesting.MakeRayCluster("rc", "default").Obj(),
			wantShm:   true,
			wantPorts: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}},
		},
		{
			name:      "plasma-directory moves the object store off /dev/shm",
			cluster:   raytesting.MakeRayCluster("rc", "default").HeadStartParam("plasma-directory", "/data").Obj(),
			wantPorts: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}},
		},
		{
			name:      "a user metrics port is kept",
			cluster:   raytesting.MakeRayCluster("rc", "default").HeadPort("metrics", 9090).HeadPort("gcs-server", 6379).Obj(),
			wantShm:   true,
			wantPorts: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}, {Name: "gcs-server", ContainerPort: 6379}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := BuildHeadPod(tc.cluster, DefaultBuildOptions())
			ray := &pod.Spec.Containers[0]
			if diff := cmp.Diff(tc.wantPorts, ray.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			mounted := false
			for _, m := range ray.VolumeMounts {
				if m.MountPath == "/dev/shm" && m.Name == "shared-mem" {
					mounted = true
				}
			}
			if mounted != tc.wantShm {
				t.Fatalf("/dev/shm mounted = %v, want %v", mounted, tc.wantShm)
			}
			if !tc.wantShm {
				return
			}
			var vol *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == "shared-mem" {
					vol = &pod.Spec.Volumes[i]
				}
			}
			if vol == nil || vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory {
				t.Fatalf("shared-mem volume = %+v, want a memory emptyDir", vol)
			}
			if !equality.Semantic.DeepEqual(tc.wantSizeLimit, vol.EmptyDir.SizeLimit) {
				t.Errorf("sizeLimit = %v, want %v", vol.EmptyDir.SizeLimit, tc.wantSizeLimit)
			}
		})
	}
}

func TestBuildWorkerPod(t *testing.T) {
	w := raytesting.MakeRayCluster("rc", "ns").HeadStartParam("port", "6380").WorkerGroup("cpu", 2)
	w.Group("cpu").Template.Name = "fixed-name"
	w.Group("cpu").Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "USER_VAR", Value: "1"}}
	cluster := w.Obj()

	pod := BuildWorkerPod(cluster, w.Group("cpu"), WorkerReplica{Index: 1}, DefaultBuildOptions())
	if pod.Name != "" || pod.GenerateName != "rc-cpu-worker-" {
		t.Errorf("name %q generateName %q, want only generateName rc-cpu-worker-", pod.Name, pod.GenerateName)
	}
	ray := &pod.Spec.Containers[0]
	const fqdn = "rc-head-svc.ns.svc.cluster.local"
	if gen := raytesting.EnvValue(t, ray, EnvKubeRayGenRayStartCmd); !strings.Contains(gen, "--address="+fqdn+":6380") {
		t.Errorf("worker command %q does not connect to the head port 6380", gen)
	}
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != "wait-gcs-ready" {
		t.Fatalf("init containers = %+v, want wait-gcs-ready", pod.Spec.InitContainers)
	}
	initC := &pod.Spec.InitContainers[0]
	if initC.Image != raytesting.DefaultImage || !strings.Contains(initC.Args[0], "ray health-check --address "+fqdn+":6380") {
		t.Errorf("wait-gcs-ready = image %q args %q", initC.Image, initC.Args)
	}
	if raytesting.EnvValue(t, initC, "USER_VAR") != "1" || raytesting.EnvValue(t, initC, EnvFQRayIP) != fqdn || raytesting.EnvValue(t, initC, EnvRayIP) != "rc-head-svc" {
		t.Errorf("wait-gcs-ready env = %+v", initC.Env)
	}
	if got := initC.Resources.Limits.Cpu().String(); got != "200m" {
		t.Errorf("wait-gcs-ready cpu limit = %s, want 200m", got)
	}

	opts := DefaultBuildOptions()
	opts.InjectWaitGCSReady = false
	if pod := BuildWorkerPod(cluster, w.Group("cpu"), WorkerReplica{}, opts); len(pod.Spec.InitContainers) != 0 {
		t.Errorf("init container injected although disabled: %+v", pod.Spec.InitContainers)
	}
}

func TestMultiHostLabels(t *testing.T) {
	tests := []struct {
		name      string
		hosts     int32
		gate      bool
		wantLabel map[string]string
		wantNone  []string
	}{
		{
			name:      "multi-host group with the gate on",
			hosts:     4,
			gate:      true,
			wantLabel: map[string]string{rayv1.RayWorkerReplicaNameKey: "tpu-abcde", rayv1.RayWorkerReplicaIndexKey: "2", rayv1.RayHostIndexKey: "3"},
		},
		{
			name:      "single-host group keeps only the replica index",
			hosts:     1,
			gate:      true,
			wantLabel: map[string]string{rayv1.RayWorkerReplicaIndexKey: "2"},
			wantNone:  []string{rayv1.RayWorkerReplicaNameKey, rayv1.RayHostIndexKey},
		},
		{
			name:     "gate off: no index labels",
			hosts:    4,
			gate:     false,
			wantNone: []string{rayv1.RayWorkerReplicaNameKey, rayv1.RayWorkerReplicaIndexKey, rayv1.RayHostIndexKey},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := raytesting.MakeRayCluster("rc", "default").MultiHostWorkerGroup("tpu", 1, tc.hosts)
			opts := DefaultBuildOptions()
			opts.MultiHostIndexing = tc.gate
			pod := BuildWorkerPod(w.Obj(), w.Group("tpu"), WorkerReplica{Name: "tpu-abcde", Index: 2, HostIndex: 3}, opts)
			for k, v := range tc.wantLabel {
				if pod.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
				}
			}
			for _, k := range tc.wantNone {
				if v, ok := pod.Labels[k]; ok {
					t.Errorf("unexpected label %s=%q", k, v)
				}
			}
		})
	}
}

func TestSidecarsAndDefaultEnvFromOptions(t *testing.T) {
	opts := DefaultBuildOptions()
	opts.HeadSidecarContainers = []corev1.Container{{Name: "head-logs"}}
	opts.WorkerSidecarContainers = []corev1.Container{{Name: "worker-logs"}}
	opts.DefaultContainerEnvs = []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "proxy"}, {Name: "RAY_ADDRESS", Value: "from-defaults"}}
	w := raytesting.MakeRayCluster("rc", "default").WorkerGroup("cpu", 1)
	cluster := w.Obj()

	head := BuildHeadPod(cluster, opts)
	worker := BuildWorkerPod(cluster, w.Group("cpu"), WorkerReplica{}, opts)
	if n := len(head.Spec.Containers); n != 2 || head.Spec.Containers[1].Name != "head-logs" {
		t.Errorf("head containers = %d, want the Ray container then head-logs", n)
	}
	if n := len(worker.Spec.Containers); n != 2 || worker.Spec.Containers[1].Name != "worker-logs" {
		t.Errorf("worker containers = %d, want the Ray container then worker-logs", n)
	}
	if got := raytesting.EnvValue(t, &head.Spec.Containers[0], "HTTP_PROXY"); got != "proxy" {
		t.Errorf("HTTP_PROXY = %q", got)
	}
	if got := raytesting.EnvValue(t, &head.Spec.Containers[0], EnvRayAddress); got != "from-defaults" {
		t.Errorf("RAY_ADDRESS = %q, want the configured default to win over the generated one", got)
	}
}

// The hash and version are stamped on every head Pod, as KubeRay v1.6
// does, so upgradeStrategy Recreate set after creation compares against
// them (the hash leaves upgradeStrategy out).
func TestRecreateAnnotations(t *testing.T) {
	opts := DefaultBuildOptions()
	opts.OperatorVersion = "v9.9.9"

	for name, cluster := range map[string]*rayv1.RayCluster{
		"no upgradeStrategy": raytesting.MakeRayCluster("rc", "default").Obj(),
		"Recreate":           raytesting.MakeRayCluster("rc", "default").UpgradeStrategy(rayv1.RayClusterRecreate).Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			pod := BuildHeadPod(cluster, opts)
			if got, want := pod.Annotations[rayv1.UpgradeStrategyRecreateHashKey], SpecHash(&cluster.Spec); got != want || got == "" {
				t.Errorf("hash annotation = %q, want %q", got, want)
			}
			if got := pod.Annotations[rayv1.KubeRayVersion]; got != "v9.9.9" {
				t.Errorf("version annotation = %q, want v9.9.9", got)
			}
		})
	}
	plain := raytesting.MakeRayCluster("rc", "default").Obj()
	recreate := raytesting.MakeRayCluster("rc", "default").UpgradeStrategy(rayv1.RayClusterRecreate).Obj()
	if SpecHash(&plain.Spec) != SpecHash(&recreate.Spec) {
		t.Error("adding upgradeStrategy changed the hash; it would recreate the cluster by itself")
	}
}

// The version guard compares the head Pod's version with this build's, so
// it must be the Gantry release the binary was built as, not a constant.
func TestOperatorVersionIsTheBuildVersion(t *testing.T) {
	defer func(v string) { version.Version = v }(version.Version)
	version.Version = "0.7.3"
	if got := DefaultBuildOptions().OperatorVersion; got != "0.7.3" {
		t.Errorf("OperatorVersion = %q, want the build's version 0.7.3", got)
	}
}

func TestSpecHash(t *testing.T) {
	base := func() *raytesting.RayClusterWrapper {
		return raytesting.MakeRayCluster("rc", "default").WorkerGroup("cpu", 2).UpgradeStrategy(rayv1.RayClusterRecreate)
	}
	baseHash := SpecHash(&base().Spec)
	tests := []struct {
		name       string
		edit       func(w *raytesting.RayClusterWrapper)
		wantChange bool
	}{
		{name: "replicas", edit: func(w *raytesting.RayClusterWrapper) { w.Group("cpu").Replicas = ptr.To[int32](7) }},
		{name: "min and max replicas", edit: func(w *raytesting.RayClusterWrapper) {
			w.Group("cpu").MinReplicas, w.Group("cpu").MaxReplicas = ptr.To[int32](1), ptr.To[int32](100)
		}},
		{name: "workersToDelete", edit: func(w *raytesting.RayClusterWrapper) {
			w.Group("cpu").ScaleStrategy.WorkersToDelete = []string{"rc-cpu-worker-abcde"}
		}},
		{name: "upgrade strategy", edit: func(w *raytesting.RayClusterWrapper) { w.UpgradeStrategy(rayv1.RayClusterUpgradeNone) }},
		{name: "tolerations and scheduling gates added by Kueue", edit: func(w *raytesting.RayClusterWrapper) {
			for _, spec := range []*corev1.PodSpec{&w.Spec.HeadGroupSpec.Template.Spec, &w.Group("cpu").Template.Spec} {
				spec.Tolerations = []corev1.Toleration{{Key: "kueue", Operator: corev1.TolerationOpExists}}
				spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
			}
		}},
		{name: "image", edit: func(w *raytesting.RayClusterWrapper) { w.Image("rayproject/ray:2.47.0") }, wantChange: true},
		{name: "rayStartParams", edit: func(w *raytesting.RayClusterWrapper) { w.WorkerStartParam("cpu", "num-cpus", "1") }, wantChange: true},
		{name: "a new group", edit: func(w *raytesting.RayClusterWrapper) { w.WorkerGroup("gpu", 0) }, wantChange: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := base()
			tc.edit(w)
			got := SpecHash(&w.Spec)
			if changed := got != baseHash; changed != tc.wantChange {
				t.Errorf("hash changed = %v, want %v (%s vs %s)", changed, tc.wantChange, got, baseHash)
			}
		})
	}
	if SpecHash(&base().Spec) != baseHash {
		t.Errorf("hash of an identical spec differs")
	}
}

func TestRayServiceServingLabel(t *testing.T) {
	w := raytesting.MakeRayCluster("rc", "default").Label(rayv1.RayOriginatedFromCRDLabelKey, "RayService").WorkerGroup("cpu", 1)
	cluster := w.Obj()
	if got := BuildHeadPod(cluster, DefaultBuildOptions()).Labels[rayv1.RayClusterServingServiceLabelKey]; got != "false" {
		t.Errorf("head ray.io/serve = %q, want false", got)
	}
	if got := BuildWorkerPod(cluster, w.Group("cpu"), WorkerReplica{}, DefaultBuildOptions()).Labels[rayv1.RayClusterServingServiceLabelKey]; got != "true" {
		t.Errorf("worker ray.io/serve = %q, want true", got)
	}
	if _, ok := BuildHeadPod(raytesting.MakeRayCluster("plain", "default").Obj(), DefaultBuildOptions()).Labels[rayv1.RayClusterServingServiceLabelKey]; ok {
		t.Errorf("ray.io/serve set on a plain RayCluster")
	}
}

func TestNameShortening(t *testing.T) {
	long := strings.Repeat("a", 60)
	if got := podGenerateName(long+"-GROUP", rayv1.WorkerNode); got != strings.Repeat("a", 50)+"-worker-" {
		t.Errorf("podGenerateName = %q", got)
	}
	tests := []struct{ in, name, label string }{
		{in: "rc", name: "rc", label: "rc"},
		{in: "1rc", name: "rrc", label: "1rc"},
		{in: "-rc", name: "rrc", label: "rrc"},
		{in: strings.Repeat("x", 10) + strings.Repeat("b", 50), name: strings.Repeat("b", 50), label: strings.Repeat("x", 10) + strings.Repeat("b", 50)},
	}
	for _, tc := range tests {
		if got := CheckName(tc.in); got != tc.name {
			t.Errorf("CheckName(%q) = %q, want %q", tc.in, got, tc.name)
		}
		if got := CheckLabel(tc.in); got != tc.label {
			t.Errorf("CheckLabel(%q) = %q, want %q", tc.in, got, tc.label)
		}
	}
}
