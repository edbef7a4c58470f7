package plugin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// The testing package imports this one, so these tests build objects by hand.

func rjob(name, ancestor string, parallelism *int32, containers ...corev1.Container) jobsetv1alpha2.ReplicatedJob {
	rj := jobsetv1alpha2.ReplicatedJob{Name: name, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Parallelism: parallelism,
		Template:    corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: containers}},
	}}}
	if ancestor != "" {
		rj.Template.Labels = map[string]string{trainer.LabelTrainJobAncestor: ancestor}
	}
	return rj
}

func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

func TestNewInfoCountsAndResources(t *testing.T) {
	node := corev1.Container{Name: "node", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}, Resources: corev1.ResourceRequirements{Requests: cpu("1")}}
	helper := corev1.Container{Name: "helper", Resources: corev1.ResourceRequirements{Requests: cpu("1")}}
	spec := &trainer.TrainingRuntimeSpec{
		MLPolicy: &trainer.MLPolicy{NumNodes: ptr.To[int32](3)},
		Template: trainer.JobSetTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"l": "v"}},
			Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
				rjob("side", "", ptr.To[int32](2), helper),
				rjob("node", trainer.AncestorTrainer, ptr.To[int32](7), node, helper),
			}},
		},
	}
	spec.Template.Spec.ReplicatedJobs[0].Replicas = 3
	job := &trainer.TrainJob{Spec: trainer.TrainJobSpec{Trainer: &trainer.Trainer{
		ResourcesPerNode: &corev1.ResourceRequirements{Requests: cpu("4"), Limits: cpu("8")},
	}}}

	info, err := NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	side, trainerPS := info.PodSets[0], info.PodSets[1]
	if side.Count != 2 || side.Replicas != 3 {
		t.Errorf("side: count %d replicas %d, want 2 and 3", side.Count, side.Replicas)
	}
	if trainerPS.Count != 3 || trainerPS.Replicas != 1 {
		t.Errorf("trainer: count %d replicas %d; mlPolicy.numNodes beats parallelism and steps have one Job", trainerPS.Count, trainerPS.Replicas)
	}
	if got := trainerPS.SinglePodRequests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("5")) != 0 {
		t.Errorf("trainer pod requests cpu = %s, want 4 (resourcesPerNode) + 1 (helper)", got.String())
	}
	if got := info.Template.ReplicatedJobs[1].Template.Spec.Template.Spec.Containers[1].Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("resourcesPerNode leaked onto a non-node container: %s", got.String())
	}
	if diff := cmp.Diff(cpu("8"), trainerPS.Containers[0].Resources.Limits); diff != "" {
		t.Errorf("node limits (-want +got):\n%s", diff)
	}
	info.Labels["x"] = "y"
	info.PodSets[1].Containers[0].Env[0].Value = "changed"
	if spec.Template.Labels["x"] != "" || spec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.Containers[0].Env[0].Value != "1" {
		t.Error("Info aliases the runtime spec")
	}
}

func TestNewInfoRejects(t *testing.T) {
	job := &trainer.TrainJob{}
	for name, spec := range map[string]*trainer.TrainingRuntimeSpec{
		"nil spec":       nil,
		"empty template": {},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewInfo(job, spec); !IsBuildError(err) {
				t.Errorf("err = %v, want a BuildError", err)
			}
		})
	}
	if _, err := NewInfo(nil, &trainer.TrainingRuntimeSpec{}); !IsBuildError(err) {
		t.Errorf("nil TrainJob: %v", err)
	}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cases := map[string]struct {
		spec corev1.PodSpec
		want string
	}{
		"containers add up": {corev1.PodSpec{Containers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{Requests: cpu("1")}}, {Resources: corev1.ResourceRequirements{Requests: cpu("2")}}}}, "3"},
		"a bigger init container wins": {corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: cpu("5")}}},
			Containers:     []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: cpu("1")}}}}, "5"},
		"sidecars count with containers and under later init containers": {corev1.PodSpec{
			InitContainers: []corev1.Container{
				{RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: cpu("1")}},
				{Resources: corev1.ResourceRequirements{Requests: cpu("3")}}},
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: cpu("2")}}}}, "4"},
		"overhead is added": {corev1.PodSpec{Overhead: cpu("250m"),
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: cpu("1")}}}}, "1250m"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PodRequests(&tc.spec)[corev1.ResourceCPU]
			if got.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("cpu = %s, want %s", got.String(), tc.want)
			}
		})
	}
}

func TestUpsertKeepsOrderAndReplacesByKey(t *testing.T) {
	env := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}
	UpsertEnv(&env, corev1.EnvVar{Name: "B", Value: "new"}, corev1.EnvVar{Name: "C", Value: "3"})
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "new"}, {Name: "C", Value: "3"}}, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	ports := []corev1.ContainerPort{{ContainerPort: 29500, Protocol: corev1.ProtocolTCP, Name: "old"}}
	UpsertPorts(&ports, corev1.ContainerPort{ContainerPort: 29500}, corev1.ContainerPort{ContainerPort: 29500, Protocol: corev1.ProtocolUDP})
	if len(ports) != 2 || ports[0].Name != "" {
		t.Errorf("ports = %v: an unset protocol is TCP, UDP is a different port", ports)
	}
	mounts := []corev1.VolumeMount{{Name: "a", MountPath: "/x"}}
	UpsertVolumeMounts(&mounts, corev1.VolumeMount{Name: "b", MountPath: "/x"})
	if len(mounts) != 1 || mounts[0].Name != "b" {
		t.Errorf("mounts = %v: keyed by mount path", mounts)
	}
}

func TestGPUCount(t *testing.T) {
	res := corev1.ResourceRequirements{Requests: cpu("1500m"), Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), "amd.com/gpu": resource.MustParse("2")}}
	if n := GPUCount(res); n != 2 {
		t.Errorf("GPUCount = %d", n)
	}
}
