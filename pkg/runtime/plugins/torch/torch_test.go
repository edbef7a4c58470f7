package torch

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func enforce(t *testing.T, job *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) *plugin.Info {
	t.Helper()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Torch{}).EnforceMLPolicy(info, job); err != nil {
		t.Fatal(err)
	}
	return info
}

func envValue(c *plugin.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return "<unset>"
}

func TestNumProcPerNode(t *testing.T) {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("8")}
	cases := map[string]struct {
		runtime       *intstr.IntOrString
		runtimeLimits corev1.ResourceList
		job           *trainertesting.TrainJobWrapper
		want          string
	}{
		"default auto without resources is 1":        {job: trainertesting.MakeTrainJob("j", "default").Image("img"), want: "1"},
		"auto counts the CPU request, not the limit": {job: trainertesting.MakeTrainJob("j", "default").ResourcesPerNode(cpu("2"), cpu("4")), want: "2"},
		"auto with only CPU requests":                {job: trainertesting.MakeTrainJob("j", "default").ResourcesPerNode(cpu("3"), nil), want: "3"},
		"auto rounds fractional CPUs up":             {job: trainertesting.MakeTrainJob("j", "default").ResourcesPerNode(cpu("500m"), nil), want: "1"},
		"auto with GPUs stays auto":                  {job: trainertesting.MakeTrainJob("j", "default").ResourcesPerNode(nil, gpu), want: "auto"},
		"auto sizes by the runtime's resources":      {runtimeLimits: cpu("6"), job: trainertesting.MakeTrainJob("j", "default").Image("img"), want: "6"},
		"job resources replace the runtime's":        {runtimeLimits: gpu, job: trainertesting.MakeTrainJob("j", "default").ResourcesPerNode(nil, cpu("2")), want: "2"},
		"cpu without resources is 1":                 {runtime: ptr.To(intstr.FromString("cpu")), job: trainertesting.MakeTrainJob("j", "default").Image("img"), want: "1"},
		"cpu counts CPUs even next to GPUs":          {runtime: ptr.To(intstr.FromString("cpu")), job: trainertesting.MakeTrainJob("j", "default").ResourcesPerNode(nil, gpu), want: "8"},
		"gpu is passed through":                      {runtime: ptr.To(intstr.FromString("gpu")), job: trainertesting.MakeTrainJob("j", "default").Image("img"), want: "gpu"},
		"runtime integer":                            {runtime: ptr.To(intstr.FromInt32(3)), job: trainertesting.MakeTrainJob("j", "default").Image("img"), want: "3"},
		"TrainJob value wins":                        {runtime: ptr.To(intstr.FromInt32(3)), job: trainertesting.MakeTrainJob("j", "default").NumProcPerNode(5).ResourcesPerNode(nil, cpu("8")), want: "5"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node := trainertesting.MakeContainer("node", "t:1").Resources(nil, tc.runtimeLimits).Obj()
			spec := trainertesting.MakeRuntimeSpec().Torch(tc.runtime).
				ReplicatedJob(trainertesting.ReplicatedJob("node", "trainer", node)).Obj()
			info := enforce(t, tc.job.Obj(), spec)
			if got := envValue(info.TrainerPodSet().FindContainer(trainer.TrainerNodeName), trainer.TorchEnvNumProcPerNode); got != tc.want {
				t.Errorf("PET_NPROC_PER_NODE = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEnforceMLPolicyEnvAndPorts(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().NumNodes(4).Torch(ptr.To(intstr.FromInt32(1))).Subdomain("net").
		ReplicatedJob(trainertesting.ReplicatedJob("trainer-job", "trainer",
			trainertesting.MakeContainer("node", "t:1").Env("PET_NNODES", "stale").Env("KEEP", "1").Obj(),
			trainertesting.MakeContainer("probe", "p:1").Obj())).Obj()
	spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "wait", Image: "w"}}
	spec.MLPolicy.Torch.EnvInjection = &trainer.TorchEnvInjection{Targets: []trainer.TorchEnvInjectionTarget{
		{JobName: "trainer-job", ContainerNames: []string{"probe", "wait"}}}}

	cases := map[string]struct {
		job       *trainer.TrainJob
		wantNodes string
	}{
		"runtime numNodes": {trainertesting.MakeTrainJob("tj", "default").Image("img").Obj(), "4"},
		"job numNodes":     {trainertesting.MakeTrainJob("tj", "default").NumNodes(2).Env("LR", "1").Obj(), "2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info := enforce(t, tc.job, spec)
			node := info.TrainerPodSet().FindContainer(trainer.TrainerNodeName)
			want := map[string]string{
				"PET_NNODES": tc.wantNodes, "PET_NPROC_PER_NODE": "1", "KEEP": "1",
				"PET_MASTER_ADDR": "tj-trainer-job-0-0.net", "PET_MASTER_PORT": "29500",
			}
			for k, v := range want {
				if got := envValue(node, k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if node.Env[0].Name != "PET_NNODES" {
				t.Errorf("runtime env order not kept: %v", node.Env)
			}
			if ref := findEnv(node, "PET_NODE_RANK"); ref == nil || ref.ValueFrom.FieldRef.FieldPath != plugin.JobCompletionIndexFieldPath {
				t.Errorf("PET_NODE_RANK = %+v", ref)
			}
			if diff := cmp.Diff([]corev1.ContainerPort{{ContainerPort: 29500}}, node.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if strconv.Itoa(int(info.TrainerPodSet().Count)) != tc.wantNodes {
				t.Errorf("count = %d", info.TrainerPodSet().Count)
			}
			ps := info.TrainerPodSet()
			for _, c := range []*plugin.Container{ps.FindContainer("probe"), ps.FindInitContainer("wait")} {
				if envValue(c, "PET_MASTER_ADDR") != "tj-trainer-job-0-0.net" || envValue(c, "LR") != "<unset>" {
					t.Errorf("envInjection target %s env = %v", c.Name, c.Env)
				}
			}
		})
	}
}

func findEnv(c *plugin.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func TestInactiveWithoutTorchPolicy(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().JAX().ReplicatedJob(trainertesting.TrainerJob("t")).Obj()
	info := enforce(t, trainertesting.MakeTrainJob("tj", "default").NumNodes(3).Obj(), spec)
	if len(info.TrainerPodSet().FindContainer(trainer.TrainerNodeName).Env) != 0 || info.TrainerPodSet().Count != 1 {
		t.Errorf("torch acted on a JAX runtime: %+v", info.TrainerPodSet())
	}
}

func TestValidate(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("t")).Obj()
	cases := map[string]struct {
		job        *trainer.TrainJob
		spec       *trainer.TrainingRuntimeSpec
		wantFields []string
	}{
		"ok":                   {job: trainertesting.MakeTrainJob("a", "default").Env("LR", "1").Obj(), spec: spec},
		"reserved env":         {job: trainertesting.MakeTrainJob("a", "default").Env("PET_NODE_RANK", "0").Env("PET_NNODES", "2").Obj(), spec: spec, wantFields: []string{"spec.trainer.env"}},
		"reserved env but MPI": {job: trainertesting.MakeTrainJob("a", "default").Env("PET_NODE_RANK", "0").Obj(), spec: trainertesting.MakeRuntimeSpec().MPI(1, false).ReplicatedJob(trainertesting.MPIJobs("m")...).Obj()},
		"unknown injection target": {job: trainertesting.MakeTrainJob("a", "default").Obj(), wantFields: []string{"spec.mlPolicy.torch.envInjection.targets[ghost]", "spec.mlPolicy.torch.envInjection.targets[node].containerNames"},
			spec: trainertesting.MakeRuntimeSpec().Torch(nil).TorchEnvInjection(
				trainer.TorchEnvInjectionTarget{JobName: "ghost", ContainerNames: []string{"x"}},
				trainer.TorchEnvInjectionTarget{JobName: "node", ContainerNames: []string{"missing"}},
			).ReplicatedJob(trainertesting.TrainerJob("t")).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info, err := plugin.NewInfo(tc.job, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range (Torch{}).Validate(info, nil, tc.job) {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.wantFields, got); diff != "" {
				t.Errorf("error fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoTrainerNoPETOnTheNode: Trainer v2.3 gives the trainer node
// container the PET_* variables and the port only for a TrainJob with
// spec.trainer; envInjection targets get them either way.
func TestNoTrainerNoPETOnTheNode(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().NumNodes(2).Torch(nil).
		ReplicatedJob(trainertesting.ReplicatedJob("node", trainer.AncestorTrainer,
			trainertesting.MakeContainer("node", "t:1").Obj(), trainertesting.MakeContainer("probe", "p:1").Obj())).Obj()
	spec.MLPolicy.Torch.EnvInjection = &trainer.TorchEnvInjection{Targets: []trainer.TorchEnvInjectionTarget{
		{JobName: "node", ContainerNames: []string{"probe"}}}}
	info := enforce(t, trainertesting.MakeTrainJob("tj", "default").Obj(), spec)
	node := info.TrainerPodSet().FindContainer(trainer.TrainerNodeName)
	if len(node.Env) != 0 || len(node.Ports) != 0 {
		t.Errorf("node container env %v, ports %v; want none without spec.trainer", node.Env, node.Ports)
	}
	if got := envValue(info.TrainerPodSet().FindContainer("probe"), trainer.TorchEnvNumNodes); got != "2" {
		t.Errorf("envInjection target PET_NNODES = %q, want 2", got)
	}
}
