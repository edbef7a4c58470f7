package builder

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestMergeLabels(t *testing.T) {
	tests := []struct {
		name        string
		user, owned map[string]string
		want        map[string]string
	}{
		{"both empty", nil, map[string]string{}, nil},
		{"user only", map[string]string{"a": "1"}, nil, map[string]string{"a": "1"}},
		{"owned wins on conflict, user keys kept", map[string]string{"app": "user", "team": "x"}, map[string]string{"app": "gantry"},
			map[string]string{"app": "gantry", "team": "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			userCopy, ownedCopy := copyStrings(tc.user), copyStrings(tc.owned)
			got := MergeLabels(tc.user, tc.owned)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MergeLabels (-want +got):\n%s", diff)
			}
			if !equality.Semantic.DeepEqual(userCopy, tc.user) || !equality.Semantic.DeepEqual(ownedCopy, tc.owned) {
				t.Error("inputs modified")
			}
		})
	}
}

func TestMetadataBuilder(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "rc", UID: "uid-1"}
	gvk := schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}
	labels := map[string]string{"app": "ray"}
	b := NewMetadata("svc", "ns").WithLabels(labels).WithAnnotations(map[string]string{"a": "1"}).
		WithOwner(owner, gvk).WithOwner(owner, gvk)
	got := b.Build()
	want := metav1.ObjectMeta{
		Name: "svc", Namespace: "ns",
		Labels:      map[string]string{LabelManagedBy: ManagedByGantry, "app": "ray"},
		Annotations: map[string]string{"a": "1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "rc", UID: "uid-1",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build (-want +got):\n%s", diff)
	}
	got.Labels["mutated"] = "yes"
	labels["later"] = "yes"
	if again := b.Build(); again.Labels["mutated"] != "" || again.Labels["later"] != "" {
		t.Errorf("built metadata aliases builder state or inputs: %v", again.Labels)
	}
}

func TestMergeContainer(t *testing.T) {
	base := corev1.Container{
		Name: "ray-head", Image: "rayproject/ray:2.9", ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"ray", "start"},
		Env:     []corev1.EnvVar{{Name: "RAY_ADDRESS", Value: "auto"}, {Name: "A", Value: "base"}},
		Ports: []corev1.ContainerPort{{Name: "gcs", ContainerPort: 6379}, {Name: "dashboard", ContainerPort: 8265},
			{ContainerPort: 9000}},
		VolumeMounts: []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
		ReadinessProbe: &corev1.Probe{PeriodSeconds: 5},
	}
	tests := []struct {
		name  string
		user  corev1.Container
		check func(t *testing.T, got corev1.Container)
	}{
		{
			name: "empty user keeps operator defaults",
			user: corev1.Container{},
			check: func(t *testing.T, got corev1.Container) {
				if diff := cmp.Diff(base, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "user scalars and lists override, keyed lists merge",
			user: corev1.Container{
				Image: "my/ray:custom", Args: []string{"--block"},
				Env:          []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}, {Name: "B", Value: "user"}},
				Ports:        []corev1.ContainerPort{{Name: "dashboard", ContainerPort: 8266}, {ContainerPort: 9000, HostPort: 19000}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "my-shm", MountPath: "/dev/shm"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 30},
			},
			check: func(t *testing.T, got corev1.Container) {
				if got.Name != "ray-head" || got.Image != "my/ray:custom" || got.ImagePullPolicy != corev1.PullIfNotPresent {
					t.Errorf("scalars: name=%q image=%q pull=%q", got.Name, got.Image, got.ImagePullPolicy)
				}
				if diff := cmp.Diff([]string{"ray", "start"}, got.Command); diff != "" {
					t.Errorf("command: %s", diff)
				}
				wantEnv := []corev1.EnvVar{{Name: "RAY_ADDRESS", Value: "auto"},
					{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "B", Value: "user"}}
				if diff := cmp.Diff(wantEnv, got.Env); diff != "" {
					t.Errorf("env (-want +got):\n%s", diff)
				}
				wantPorts := []corev1.ContainerPort{{Name: "gcs", ContainerPort: 6379}, {Name: "dashboard", ContainerPort: 8266},
					{ContainerPort: 9000, HostPort: 19000}}
				if diff := cmp.Diff(wantPorts, got.Ports); diff != "" {
					t.Errorf("ports (-want +got):\n%s", diff)
				}
				wantMounts := []corev1.VolumeMount{{Name: "my-shm", MountPath: "/dev/shm"}, {Name: "data", MountPath: "/data"}}
				if diff := cmp.Diff(wantMounts, got.VolumeMounts); diff != "" {
					t.Errorf("mounts (-want +got):\n%s", diff)
				}
				req, lim := got.Resources.Requests, got.Resources.Limits
				if req.Cpu().String() != "4" || req.Memory().String() != "1Gi" || lim.Memory().String() != "8Gi" {
					t.Errorf("resources = %+v", got.Resources)
				}
				if got.ReadinessProbe.PeriodSeconds != 30 {
					t.Errorf("probe = %+v", got.ReadinessProbe)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			baseCopy, userCopy := base.DeepCopy(), tc.user.DeepCopy()
			got := MergeContainer(base, tc.user)
			tc.check(t, got)
			if !equality.Semantic.DeepEqual(*baseCopy, base) || !equality.Semantic.DeepEqual(*userCopy, tc.user) {
				t.Fatal("inputs modified")
			}
			// The result must not share memory with the inputs either.
			got.Env[0].Value = "changed"
			got.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("99")
			if !equality.Semantic.DeepEqual(*baseCopy, base) || !equality.Semantic.DeepEqual(*userCopy, tc.user) {
				t.Error("result aliases an input")
			}
		})
	}
}

func TestMergePodTemplate(t *testing.T) {
	base := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{LabelManagedBy: ManagedByGantry, "ray.io/node-type": "head"},
			Annotations: map[string]string{"gantry.dev/hash": "abc"},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:  corev1.RestartPolicyAlways,
			InitContainers: []corev1.Container{{Name: "wait-gcs", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "ray-head", Image: "ray:1", Env: []corev1.EnvVar{{Name: "X", Value: "1"}}}},
			Volumes:        []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
			NodeSelector:   map[string]string{"pool": "default"},
		},
	}
	tests := []struct {
		name  string
		user  corev1.PodTemplateSpec
		check func(t *testing.T, got corev1.PodTemplateSpec)
	}{
		{
			name: "empty user template keeps the base",
			check: func(t *testing.T, got corev1.PodTemplateSpec) {
				if diff := cmp.Diff(base, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "user values override, operator labels win",
			user: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"ray.io/node-type": "worker", "team": "ml"},
					Annotations: map[string]string{"gantry.dev/hash": "user", "note": "hi"},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName: "user-sa",
					Containers: []corev1.Container{
						{Name: "ray-head", Env: []corev1.EnvVar{{Name: "Y", Value: "2"}}},
						{Name: "sidecar", Image: "fluentbit"},
					},
					Volumes: []corev1.Volume{
						{Name: "shm", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev/shm"}}},
						{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
					NodeSelector: map[string]string{"gpu": "a100"},
					Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
				},
			},
			check: func(t *testing.T, got corev1.PodTemplateSpec) {
				wantLabels := map[string]string{LabelManagedBy: ManagedByGantry, "ray.io/node-type": "head", "team": "ml"}
				if diff := cmp.Diff(wantLabels, got.Labels); diff != "" {
					t.Errorf("labels (-want +got):\n%s", diff)
				}
				if got.Annotations["gantry.dev/hash"] != "abc" || got.Annotations["note"] != "hi" {
					t.Errorf("annotations = %v", got.Annotations)
				}
				s := got.Spec
				if s.ServiceAccountName != "user-sa" || s.RestartPolicy != corev1.RestartPolicyAlways || len(s.Tolerations) != 1 {
					t.Errorf("scalars: sa=%q restart=%q tolerations=%v", s.ServiceAccountName, s.RestartPolicy, s.Tolerations)
				}
				if len(s.InitContainers) != 1 || len(s.Containers) != 2 || s.Containers[0].Image != "ray:1" ||
					len(s.Containers[0].Env) != 2 || s.Containers[1].Name != "sidecar" {
					t.Errorf("containers = %+v", s.Containers)
				}
				if len(s.Volumes) != 2 || s.Volumes[0].HostPath == nil || s.Volumes[0].EmptyDir != nil || s.Volumes[1].Name != "data" {
					t.Errorf("volumes = %+v", s.Volumes)
				}
				if diff := cmp.Diff(map[string]string{"pool": "default", "gpu": "a100"}, s.NodeSelector); diff != "" {
					t.Errorf("nodeSelector (-want +got):\n%s", diff)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			baseCopy, userCopy := base.DeepCopy(), tc.user.DeepCopy()
			got := MergePodTemplate(base, tc.user)
			tc.check(t, got)
			if !equality.Semantic.DeepEqual(*baseCopy, base) || !equality.Semantic.DeepEqual(*userCopy, tc.user) {
				t.Fatal("inputs modified")
			}
			got.Labels["x"] = "y"
			got.Spec.NodeSelector["x"] = "y"
			got.Spec.Containers[0].Env[0].Value = "changed"
			if !equality.Semantic.DeepEqual(*baseCopy, base) || !equality.Semantic.DeepEqual(*userCopy, tc.user) {
				t.Error("result aliases an input")
			}
		})
	}
}

// TestMergeContainerPortKeyedByContainerPort: the API merges container ports
// by containerPort, so a user port with the operator's number changes the
// operator's port, whatever its name. The reflection merge keyed ports by
// name and appended such a port as a second one with the same number.
func TestMergeContainerPortKeyedByContainerPort(t *testing.T) {
	base := corev1.Container{Name: "slurmrestd", Image: "slurmrestd:25.11",
		Ports: []corev1.ContainerPort{{Name: "slurmrestd", ContainerPort: 6820, Protocol: corev1.ProtocolTCP}}}
	tests := []struct {
		name string
		user []corev1.ContainerPort
		want []corev1.ContainerPort
	}{
		{
			name: "unnamed: adds a host port to the operator's port",
			user: []corev1.ContainerPort{{ContainerPort: 6820, HostPort: 6820}},
			want: []corev1.ContainerPort{{Name: "slurmrestd", ContainerPort: 6820, HostPort: 6820, Protocol: corev1.ProtocolTCP}},
		},
		{
			name: "another name: renames the operator's port",
			user: []corev1.ContainerPort{{Name: "http", ContainerPort: 6820}},
			want: []corev1.ContainerPort{{Name: "http", ContainerPort: 6820, Protocol: corev1.ProtocolTCP}},
		},
		{
			name: "the operator's name at another number: moves the port",
			user: []corev1.ContainerPort{{Name: "slurmrestd", ContainerPort: 8080}},
			want: []corev1.ContainerPort{{Name: "slurmrestd", ContainerPort: 8080}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MergeContainer(base, corev1.Container{Ports: tc.user})
			if diff := cmp.Diff(tc.want, got.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMergeObjectsFieldByField pins what the strategic merge changed from the
// reflection merge, which replaced a pointer the user set as a whole: objects
// now merge field by field, and a one-of member the user picks replaces the
// operator's.
func TestMergeObjectsFieldByField(t *testing.T) {
	base := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](401), FSGroup: ptr.To[int64](401)},
		Containers: []corev1.Container{{
			Name: "slurmdbd",
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 10, TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6819)}}},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To[int64](401)},
			VolumeMounts:    []corev1.VolumeMount{{Name: "etc", MountPath: "/etc/slurm", ReadOnly: true}},
		}},
	}}
	user := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
		Containers: []corev1.Container{{
			Name:            "slurmdbd",
			ReadinessProbe:  &corev1.Probe{PeriodSeconds: 30},
			LivenessProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(false)},
			VolumeMounts:    []corev1.VolumeMount{{Name: "my-etc", MountPath: "/etc/slurm"}},
		}},
	}}
	got := MergePodTemplate(base, user)
	wantPod := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](401)}
	if diff := cmp.Diff(wantPod, got.Spec.SecurityContext); diff != "" {
		t.Errorf("pod securityContext (-want +got):\n%s", diff)
	}
	c := got.Spec.Containers[0]
	wantProbe := &corev1.Probe{PeriodSeconds: 30, TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{
		TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6819)}}}
	if diff := cmp.Diff(wantProbe, c.ReadinessProbe); diff != "" {
		t.Errorf("readiness probe (-want +got):\n%s", diff)
	}
	// An explicit false is a value, not an absence: it wins.
	if diff := cmp.Diff(&corev1.SecurityContext{Privileged: ptr.To(false), RunAsUser: ptr.To[int64](401)}, c.SecurityContext); diff != "" {
		t.Errorf("container securityContext (-want +got):\n%s", diff)
	}
	// A false readOnly is omitted from the user's JSON, so the operator's stays.
	if diff := cmp.Diff([]corev1.VolumeMount{{Name: "my-etc", MountPath: "/etc/slurm", ReadOnly: true}}, c.VolumeMounts); diff != "" {
		t.Errorf("volume mounts (-want +got):\n%s", diff)
	}
}

func TestObjectBuilders(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "n", Namespace: "ns", Labels: map[string]string{"a": "1"}}
	selector := map[string]string{"app": "x"}
	ports := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}
	data := map[string]string{"k": "v"}
	one, fifty := intstr.FromInt32(1), intstr.FromString("50%")
	snapshot := func() any {
		return []any{*meta.DeepCopy(), copyStrings(selector), append([]corev1.ServicePort(nil), ports...), copyStrings(data), one, fifty}
	}
	before := snapshot()

	svc := Service(ServiceOptions{Meta: meta, Type: corev1.ServiceTypeNodePort, Selector: selector, Ports: ports})
	headless := HeadlessService(ServiceOptions{Meta: meta, Type: corev1.ServiceTypeLoadBalancer, Selector: selector, Ports: ports, PublishNotReadyAddresses: true})
	pdbMin := PodDisruptionBudget(meta, selector, &one, nil)
	pdbBoth := PodDisruptionBudget(meta, selector, &one, &fifty)
	pdbMax := PodDisruptionBudget(meta, selector, nil, &fifty)
	cm := ConfigMap(meta, data)

	tests := []struct {
		name string
		ok   bool
	}{
		{"service type and selector", svc.Spec.Type == corev1.ServiceTypeNodePort && svc.Spec.Selector["app"] == "x" && svc.Spec.ClusterIP == ""},
		{"service ports", len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].TargetPort.StrVal == "http"},
		{"headless is ClusterIP None", headless.Spec.ClusterIP == corev1.ClusterIPNone && headless.Spec.Type == corev1.ServiceTypeClusterIP},
		{"headless publishes not-ready addresses", headless.Spec.PublishNotReadyAddresses},
		{"pdb minAvailable", pdbMin.Spec.MinAvailable.IntValue() == 1 && pdbMin.Spec.MaxUnavailable == nil},
		{"pdb both set keeps only minAvailable", pdbBoth.Spec.MinAvailable != nil && pdbBoth.Spec.MaxUnavailable == nil},
		{"pdb maxUnavailable", pdbMax.Spec.MaxUnavailable.StrVal == "50%" && pdbMax.Spec.MinAvailable == nil},
		{"pdb selector", pdbMin.Spec.Selector.MatchLabels["app"] == "x"},
		{"configmap", cm.Data["k"] == "v" && cm.Name == "n" && cm.Labels["a"] == "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Error("builder output wrong")
			}
		})
	}

	// Mutating the outputs must not reach the inputs.
	svc.Labels["a"] = "changed"
	svc.Spec.Selector["app"] = "changed"
	svc.Spec.Ports[0].Port = 1
	pdbMin.Spec.Selector.MatchLabels["app"] = "changed"
	*pdbMin.Spec.MinAvailable = intstr.FromInt32(7)
	cm.Data["k"] = "changed"
	if diff := cmp.Diff(before, snapshot()); diff != "" {
		t.Errorf("inputs changed (-before +after):\n%s", diff)
	}
}

func TestSelectorLabels(t *testing.T) {
	got := SelectorLabels("ray", "rc1", "head")
	want := map[string]string{LabelName: "ray", LabelInstance: "rc1", LabelComponent: "head"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, ok := SelectorLabels("ray", "rc1", "")[LabelComponent]; ok {
		t.Error("empty component must not produce a label")
	}
}

// TestMergeContainerAppendsArgs: the user's args follow the operator's, as
// Slinky's BuildContainer appends them (v1.2.1 common/container.go), so a
// slurmd given "-vvv" keeps -Z and --conf-server and still joins the
// cluster; without the user's args the operator's stay as they are.
func TestMergeContainerAppendsArgs(t *testing.T) {
	base := corev1.Container{Name: "slurmd", Args: []string{"-Z", "--conf-server", "slurm-controller:6817"}}
	got := MergeContainer(base, corev1.Container{Args: []string{"-vvv"}})
	if want := []string{"-Z", "--conf-server", "slurm-controller:6817", "-vvv"}; !slices.Equal(got.Args, want) {
		t.Errorf("args = %q, want %q", got.Args, want)
	}
	if len(base.Args) != 3 {
		t.Errorf("base modified: %q", base.Args)
	}
	if got := MergeContainer(base, corev1.Container{Image: "x"}); !slices.Equal(got.Args, base.Args) {
		t.Errorf("args without the user's = %q, want %q", got.Args, base.Args)
	}
	if got := MergeContainer(corev1.Container{Name: "c"}, corev1.Container{Args: []string{"a"}}); !slices.Equal(got.Args, []string{"a"}) {
		t.Errorf("args with no operator's = %q", got.Args)
	}
}
