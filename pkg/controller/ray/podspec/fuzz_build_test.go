package podspec_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	rayvalidation "github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// FuzzBuildPods: the head and worker Pod builders, on any cluster
// validation accepts, return Pods without a panic, without modifying the
// cluster, the same Pods for the same input, with names the API server
// accepts (the head always; a worker when its group name can be part of a
// DNS name, which validation does not check, as in KubeRay), valid labels
// when the user's labels are valid, and the generated `ray start` in the
// command and in KUBERAY_GEN_RAY_START_CMD.
func FuzzBuildPods(f *testing.F) {
	samples := raytesting.SampleClusters(f)
	accepted := 0
	for i, s := range samples {
		f.Add(s, uint8(i), uint16(i))
		if c, ok := raytesting.DecodeCluster(s); ok && rayvalidation.Validate(c, rayvalidation.SpecValidationOptions{AllowWorkerGroupSuspend: true}) == nil {
			accepted++
		}
	}
	// Otherwise the target would build nothing.
	if accepted < len(samples)/2 {
		f.Fatalf("validation accepts only %d of the %d samples", accepted, len(samples))
	}
	for i, s := range raytesting.HostileClusters(f, samples[0]) {
		f.Add(s, uint8(0xff-i), uint16(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, flags uint8, index uint16) {
		cluster, ok := raytesting.DecodeCluster(data)
		if !ok || rayvalidation.Validate(cluster, rayvalidation.SpecValidationOptions{AllowWorkerGroupSuspend: true}) != nil {
			return
		}
		if len(cluster.Spec.WorkerGroupSpecs) > 4 {
			cluster.Spec.WorkerGroupSpecs = cluster.Spec.WorkerGroupSpecs[:4]
		}
		opts := podspec.DefaultBuildOptions()
		opts.OperatorVersion = "fuzz"
		opts.DeterministicHeadPodName = flags&1 != 0
		opts.LoginShell = flags&2 != 0
		opts.InjectProbes = flags&4 == 0
		opts.InjectWaitGCSReady = flags&8 == 0
		opts.MultiHostIndexing = flags&16 == 0
		opts.HeadClusterIPService = flags&32 != 0
		if flags&64 != 0 {
			opts.DefaultContainerEnvs = []corev1.EnvVar{{Name: "RAY_DEFAULT", Value: "1"}}
			opts.WorkerSidecarContainers = []corev1.Container{{Name: "sidecar", Image: "busybox"}}
		}
		before := cluster.DeepCopy()

		head := podspec.BuildHeadPod(cluster, opts)
		if again := podspec.BuildHeadPod(cluster, opts); !equality.Semantic.DeepEqual(head, again) {
			t.Fatal("BuildHeadPod is not deterministic")
		}
		checkRayPod(t, cluster, &head, rayv1.HeadNode, rayv1.RayNodeHeadGroupLabelValue, cluster.Spec.HeadGroupSpec.Template.Labels)
		if opts.DeterministicHeadPodName {
			if head.GenerateName != "" {
				t.Fatalf("deterministic head name, but generateName %q", head.GenerateName)
			}
			if msgs := validation.IsDNS1123Subdomain(head.Name); len(msgs) > 0 {
				t.Fatalf("head Pod name %q: %v", head.Name, msgs)
			}
		} else if msgs := validation.IsDNS1123Subdomain(head.GenerateName + "x7k2q"); len(msgs) > 0 || head.Name != "" {
			t.Fatalf("head Pod name %q generateName %q: %v", head.Name, head.GenerateName, msgs)
		}

		for i := range cluster.Spec.WorkerGroupSpecs {
			group := &cluster.Spec.WorkerGroupSpecs[i]
			r := podspec.WorkerReplica{Name: group.GroupName + "-x7k2q", Index: int(index), HostIndex: int(index) % int(group.Hosts())}
			pod := podspec.BuildWorkerPod(cluster, group, r, opts)
			if again := podspec.BuildWorkerPod(cluster, group, r, opts); !equality.Semantic.DeepEqual(pod, again) {
				t.Fatalf("BuildWorkerPod of group %q is not deterministic", group.GroupName)
			}
			// The replica name is the reconciler's "<group>-<5 random>", a
			// valid label value only for a group name of 1 to 57 label
			// characters, which validation does not require (nor does
			// KubeRay): see testdata/fuzz/FuzzBuildPods.
			var copied []string
			if group.Hosts() > 1 && opts.MultiHostIndexing {
				copied = append(copied, r.Name)
			}
			checkRayPod(t, cluster, &pod, rayv1.WorkerNode, group.GroupName, group.Template.Labels, copied...)
			if pod.Name != "" {
				t.Fatalf("worker Pod has a fixed name %q", pod.Name)
			}
			if len(validation.IsDNS1123Label(strings.ToLower(group.GroupName))) == 0 {
				if msgs := validation.IsDNS1123Subdomain(pod.GenerateName + "x7k2q"); len(msgs) > 0 {
					t.Fatalf("group %q: worker generateName %q: %v", group.GroupName, pod.GenerateName, msgs)
				}
			}
			if opts.InjectWaitGCSReady && podspec.ContainerIndex(pod.Spec.InitContainers, podspec.WaitGCSReadyContainerName) < 0 {
				t.Fatalf("group %q: no %s init container", group.GroupName, podspec.WaitGCSReadyContainerName)
			}
		}
		if !equality.Semantic.DeepEqual(before, cluster) {
			t.Fatal("the builders modified the cluster")
		}
		if podspec.SpecHash(&cluster.Spec) != podspec.SpecHash(&before.Spec) {
			t.Fatal("SpecHash is not deterministic")
		}
	})
}

// checkRayPod checks what every Ray Pod promises: the operator's labels,
// owner, the Ray container's command and the generated command's env var.
// copied are other values the builder puts in labels as it gets them.
func checkRayPod(t *testing.T, cluster *rayv1.RayCluster, pod *corev1.Pod, nodeType rayv1.RayNodeType, group string, templateLabels map[string]string, copied ...string) {
	t.Helper()
	if pod.Namespace != cluster.Namespace {
		t.Fatalf("%s Pod in namespace %q, cluster in %q", nodeType, pod.Namespace, cluster.Namespace)
	}
	want := map[string]string{
		rayv1.RayClusterLabelKey:   cluster.Name,
		rayv1.RayNodeTypeLabelKey:  string(nodeType),
		rayv1.RayNodeGroupLabelKey: group,
	}
	for k, v := range want {
		if pod.Labels[k] != v {
			t.Fatalf("%s Pod label %s = %q, want %q", nodeType, k, pod.Labels[k], v)
		}
	}
	// The user's labels are copied as they are; with valid ones (and a
	// group name and copied values that are valid label values) every
	// label is valid.
	userValid := len(validation.IsValidLabelValue(group)) == 0
	for _, v := range copied {
		userValid = userValid && len(validation.IsValidLabelValue(v)) == 0
	}
	for k, v := range templateLabels {
		userValid = userValid && len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0
	}
	if userValid {
		for k, v := range pod.Labels {
			if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
				t.Fatalf("%s Pod label %q=%q is invalid", nodeType, k, v)
			}
		}
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != cluster.UID {
		t.Fatalf("%s Pod owner references %+v", nodeType, pod.OwnerReferences)
	}
	if len(pod.Spec.Containers) == 0 {
		t.Fatalf("%s Pod has no containers", nodeType)
	}
	ray := &pod.Spec.Containers[0]
	gen, ok := raytesting.EnvOf(ray, podspec.EnvKubeRayGenRayStartCmd)
	if !ok || !strings.HasPrefix(gen.Value, "ray start") {
		t.Fatalf("%s Pod: %s = %q", nodeType, podspec.EnvKubeRayGenRayStartCmd, gen.Value)
	}
	if strings.EqualFold(pod.Annotations[rayv1.RayOverwriteContainerCmdAnnotationKey], "true") {
		return
	}
	tmpl := cluster.Spec.HeadGroupSpec.Template
	if nodeType == rayv1.WorkerNode {
		for i := range cluster.Spec.WorkerGroupSpecs {
			if cluster.Spec.WorkerGroupSpecs[i].GroupName == group {
				tmpl = cluster.Spec.WorkerGroupSpecs[i].Template
			}
		}
	}
	user := strings.Join(append(slices.Clone(tmpl.Spec.Containers[0].Command), tmpl.Spec.Containers[0].Args...), " ")
	if strings.Contains(user, "ray start") {
		return
	}
	if len(ray.Command) != 3 || ray.Command[0] != "/bin/bash" || len(ray.Args) != 1 || !strings.HasSuffix(ray.Args[0], gen.Value) {
		t.Fatalf("%s Pod: command %q args %q do not end in %q", nodeType, ray.Command, ray.Args, gen.Value)
	}
}
