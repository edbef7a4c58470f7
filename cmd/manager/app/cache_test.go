package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fullPod has every field trimPod keeps and every field it drops set.
func fullPod() *corev1.Pod {
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "rayproject/ray:2.46.0",
			Ports:     []corev1.ContainerPort{{Name: "gcs", ContainerPort: 6379}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			Env:       []corev1.EnvVar{{Name: "RAY_ADDRESS", Value: "x"}}, EnvFrom: []corev1.EnvFromSource{{Prefix: "P"}},
			Command: []string{"/bin/bash", "-lc"}, Args: []string{"ray start --head"},
			LivenessProbe:   &corev1.Probe{InitialDelaySeconds: 30},
			ReadinessProbe:  &corev1.Probe{InitialDelaySeconds: 10},
			StartupProbe:    &corev1.Probe{PeriodSeconds: 5},
			Lifecycle:       &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"ray", "stop"}}}},
			VolumeMounts:    []corev1.VolumeMount{{Name: "logs", MountPath: "/tmp/ray"}},
			VolumeDevices:   []corev1.VolumeDevice{{Name: "dev", DevicePath: "/dev/x"}},
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "rc-head", Namespace: "ns", Labels: map[string]string{"ray.io/cluster": "rc"},
			Annotations:     map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{Name: "rc", UID: "u", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "gantry"}},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{container("wait-gcs")},
			Containers:     []corev1.Container{container("ray-head"), container("autoscaler")},
			EphemeralContainers: []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"},
			}},
			NodeName: "node-1", Hostname: "rc-head", Subdomain: "rc-headless", HostNetwork: true,
			RestartPolicy: corev1.RestartPolicyNever, SchedulerName: "volcano",
			Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
			Affinity:    &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}},
			Volumes: []corev1.Volume{
				{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
				}}},
			},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			InitContainerStatuses: []corev1.ContainerStatus{{
				Name: "wait-gcs", Ready: true, Image: "rayproject/ray:2.46.0", ImageID: "docker.io/rayproject/ray@sha256:1",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}},
			}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "ray-head", RestartCount: 2, Ready: true, Started: ptr.To(true),
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled"}},
				Image:                "rayproject/ray:2.46.0", ImageID: "docker.io/rayproject/ray@sha256:1", ContainerID: "containerd://abc",
				VolumeMounts: []corev1.VolumeMountStatus{{Name: "logs", MountPath: "/tmp/ray"}},
			}},
			EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "debug"}},
		},
	}
}

// TestTrimPodKeepsWhatReconcilersRead: the cached Pod keeps its metadata,
// status and the spec fields the reconcilers read, and loses the rest of
// each container and the managedFields.
func TestTrimPodKeepsWhatReconcilersRead(t *testing.T) {
	out, err := trimPod(fullPod())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)

	want := fullPod()
	want.ManagedFields = nil
	want.Spec.EphemeralContainers = nil
	for i := range want.Spec.Volumes {
		want.Spec.Volumes[i] = corev1.Volume{Name: want.Spec.Volumes[i].Name}
	}
	for _, st := range [][]corev1.ContainerStatus{want.Status.InitContainerStatuses, want.Status.ContainerStatuses} {
		for i := range st {
			st[i] = corev1.ContainerStatus{Name: st[i].Name, State: st[i].State, Ready: st[i].Ready, RestartCount: st[i].RestartCount, Started: st[i].Started}
		}
	}
	want.Status.EphemeralContainerStatuses = nil
	for _, cs := range [][]corev1.Container{want.Spec.InitContainers, want.Spec.Containers} {
		for i := range cs {
			cs[i] = corev1.Container{Name: cs[i].Name, Image: cs[i].Image, Ports: cs[i].Ports, Resources: cs[i].Resources}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed Pod (-want +got):\n%s", diff)
	}
}

// TestCacheOptionsTrimPods: Pods are cached trimmed; every other kind keeps
// the default transform (managedFields stripped).
func TestCacheOptionsTrimPods(t *testing.T) {
	opts, err := CacheOptions(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.DefaultTransform == nil {
		t.Fatal("no default transform: managedFields would be cached")
	}
	found := false
	for obj, by := range opts.ByObject {
		_, isPod := obj.(*corev1.Pod)
		if isPod {
			found = true
			if by.Transform == nil || by.Label == nil {
				t.Fatalf("Pods: transform %v, label selector %v; want both", by.Transform != nil, by.Label)
			}
			out, _ := by.Transform(fullPod())
			if c := out.(*corev1.Pod).Spec.Containers[0]; c.Env != nil || c.Command != nil {
				t.Errorf("the Pod transform is not trimPod: %+v", c)
			}
		} else if by.Transform != nil {
			t.Errorf("%T has a transform of its own; it would replace the default", obj)
		}
	}
	if !found {
		t.Fatal("no cache options for Pods")
	}
}
