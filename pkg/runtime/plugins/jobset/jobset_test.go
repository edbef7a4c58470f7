package jobset

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func mustInfo(t *testing.T, job *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) *plugin.Info {
	t.Helper()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func podSpecOf(js *jobsetv1alpha2.JobSet, job string) *corev1.PodTemplateSpec {
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Name == job {
			return &js.Spec.ReplicatedJobs[i].Template.Spec.Template
		}
	}
	return nil
}

func TestRenderRuntimePatches(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().
		Labels(map[string]string{"team": "ml"}).
		ReplicatedJob(trainertesting.ReplicatedJob("sidecar-job", "", trainertesting.MakeContainer("helper", "h:1").Env("A", "runtime").Obj())).
		ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
	patch := func(nodeSelector map[string]string, env ...corev1.EnvVar) *trainer.TrainingRuntimeSpecPatch {
		return &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
			Metadata: &metav1.ObjectMeta{Labels: map[string]string{"kueue.x-k8s.io/queue-name": "q"}},
			Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
				Name: "sidecar-job",
				Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
					Spec: &trainer.PodSpecPatch{NodeSelector: nodeSelector, Containers: []trainer.ContainerPatch{{Name: "helper", Env: env}}},
				}}},
			}}},
		}}
	}
	job := trainertesting.MakeTrainJob("tj", "default").
		RuntimePatch("user", patch(map[string]string{"zone": "a"}, corev1.EnvVar{Name: "A", Value: "user"})).
		RuntimePatch("kueue", patch(map[string]string{"zone": "b", "pool": "gpu"})).Obj()

	js := Render(mustInfo(t, job, spec), job)
	if names := []string{js.Spec.ReplicatedJobs[0].Name, js.Spec.ReplicatedJobs[1].Name}; names[0] != "sidecar-job" || names[1] != "node" {
		t.Errorf("replicated job order changed: %v", names)
	}
	pod := podSpecOf(js, "sidecar-job")
	if diff := cmp.Diff(map[string]string{"zone": "b", "pool": "gpu"}, pod.Spec.NodeSelector); diff != "" {
		t.Errorf("later patch must win (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "A", Value: "user"}}, pod.Spec.Containers[0].Env); diff != "" {
		t.Errorf("env patch (-want +got):\n%s", diff)
	}
	if pod.Spec.Containers[0].Image != "h:1" {
		t.Errorf("patch dropped the image: %q", pod.Spec.Containers[0].Image)
	}
	wantLabels := map[string]string{"app.kubernetes.io/managed-by": "gantry", "team": "ml", "kueue.x-k8s.io/queue-name": "q"}
	if diff := cmp.Diff(wantLabels, js.Labels); diff != "" {
		t.Errorf("JobSet labels (-want +got):\n%s", diff)
	}
}

func TestRuntimePatchValidation(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
	patch := func(job, container string, env ...corev1.EnvVar) *trainer.TrainingRuntimeSpecPatch {
		return &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{
			ReplicatedJobs: []trainer.ReplicatedJobPatch{{Name: job, Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
				Template: &trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{{Name: container, Env: env}}}},
			}}}},
		}}}
	}
	base := "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[node].template.spec.template.spec.containers"
	cases := map[string]struct {
		patch     *trainer.TrainingRuntimeSpecPatch
		wantField string
	}{
		"unknown job":           {patch("ghost", "node"), "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[ghost]"},
		"unknown container":     {patch("node", "ghost"), base + "[ghost]"},
		"env on node container": {patch("node", "node", corev1.EnvVar{Name: "X", Value: "1"}), base + "[node].env"},
		"allowed":               {patch("node", "node"), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := trainertesting.MakeTrainJob("tj", "default").RuntimePatch("m", tc.patch).Obj()
			errs := plugin.ValidateRuntimePatches(job, &spec.Template.Spec)
			var got string
			if len(errs) > 0 {
				got = errs[0].Field
			}
			if got != tc.wantField || len(errs) > 1 {
				t.Errorf("errors = %v, want one on %q", errs, tc.wantField)
			}
		})
	}
}

func TestRenderTrainerAndInitializers(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().MPI(1, false).ReplicatedJob(trainertesting.InitializerJobs()...).ReplicatedJob(trainertesting.MPIJobs("mpi:1")...).Obj()
	spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}
	job := trainertesting.MakeTrainJob("tj", "default").Image("mpi:2").Command("mpirun", "-n", "4", "train").Args("--fast").
		DatasetInitializer("s3://bucket", "creds").Obj()
	info := mustInfo(t, job, spec)
	info.Scheduler.PodLabels["gang"] = "tj"
	js := Render(info, job)

	launcher := podSpecOf(js, "launcher").Spec.Containers[0]
	worker := podSpecOf(js, "node").Spec.Containers[0]
	// Upstream's Builder.Trainer sets the image on the trainer step's node
	// container only; the workers keep the runtime's.
	if launcher.Image != "mpi:2" || worker.Image != "mpi:1" {
		t.Errorf("images: launcher %q worker %q, want mpi:2 and the runtime's mpi:1", launcher.Image, worker.Image)
	}
	if diff := cmp.Diff([]string{"mpirun", "-n", "4", "train"}, launcher.Command); diff != "" || len(launcher.Args) != 1 {
		t.Errorf("launcher command/args: %v %v", launcher.Command, launcher.Args)
	}
	if diff := cmp.Diff([]string{"/usr/sbin/sshd", "-De"}, worker.Command); diff != "" || worker.Args != nil {
		t.Errorf("an MPI worker must keep running sshd; got %v %v", worker.Command, worker.Args)
	}
	dataset := podSpecOf(js, "dataset-initializer").Spec.Containers[0]
	if len(dataset.EnvFrom) != 1 || dataset.Env[0].Name != InitializerEnvStorageURI || dataset.Env[0].Value != "s3://bucket" {
		t.Errorf("dataset initializer env %v envFrom %v (the runtime's own secretRef must not be duplicated)", dataset.Env, dataset.EnvFrom)
	}
	for _, rj := range js.Spec.ReplicatedJobs {
		if rj.Template.Spec.Template.Labels["gang"] != "tj" {
			t.Errorf("%s pods lack the scheduler label", rj.Name)
		}
	}
	if spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels != nil {
		t.Error("Render modified the runtime spec")
	}
}

func TestIdentifyPodNetwork(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().Subdomain("custom").ReplicatedJob(trainertesting.TrainerJob("t:1")).
		ReplicatedJob(trainertesting.ReplicatedJob("ps", "", trainertesting.MakeContainer("ps", "p:1").Obj())).Obj()
	spec.Template.Spec.ReplicatedJobs[1].Replicas = 2
	job := trainertesting.MakeTrainJob("tj", "default").Obj()
	info := mustInfo(t, job, spec)
	info.PodSets[0].Count = 2
	if err := (JobSet{}).IdentifyPodNetwork(info, job); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"tj-node-0-0.custom", "tj-node-0-1.custom"},
		{"tj-ps-0-0.custom", "tj-ps-1-0.custom"},
	}
	if diff := cmp.Diff(want, [][]string{info.PodSets[0].Endpoints, info.PodSets[1].Endpoints}); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
}

func TestValidateSteps(t *testing.T) {
	cases := map[string]struct {
		spec    *trainer.TrainingRuntimeSpec
		job     *trainer.TrainJob
		wantErr bool
	}{
		"dataset without initializer job": {
			spec: trainertesting.MakeRuntimeSpec().ReplicatedJob(trainertesting.TrainerJob("t")).Obj(),
			job:  trainertesting.MakeTrainJob("a", "default").DatasetInitializer("s3://x", "").Obj(), wantErr: true,
		},
		"model initializer present": {
			spec: trainertesting.MakeRuntimeSpec().ReplicatedJob(trainertesting.InitializerJobs()...).Obj(),
			job:  trainertesting.MakeTrainJob("a", "default").ModelInitializer("hf://m", "").Obj(),
		},
		"trainer override without trainer step": {
			spec: trainertesting.MakeRuntimeSpec().ReplicatedJob(trainertesting.InitializerJobs()...).Obj(),
			job:  trainertesting.MakeTrainJob("a", "default").Image("x").Obj(), wantErr: true,
		},
		"trainer step without node container": {
			spec: trainertesting.MakeRuntimeSpec().ReplicatedJob(trainertesting.ReplicatedJob("node", "trainer", trainertesting.MakeContainer("main", "x").Obj())).Obj(),
			job:  trainertesting.MakeTrainJob("a", "default").Image("x").Obj(), wantErr: true,
		},
		"launcher container when the launcher runs as a node": {
			spec: trainertesting.MakeRuntimeSpec().MPI(1, true).ReplicatedJob(trainertesting.ReplicatedJob("launcher", "trainer", trainertesting.MakeContainer("launcher", "x").Obj())).Obj(),
			job:  trainertesting.MakeTrainJob("a", "default").Image("x").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := (JobSet{}).Validate(mustInfo(t, tc.job, tc.spec), nil, tc.job)
			if (len(errs) > 0) != tc.wantErr {
				t.Errorf("errors = %v, want error %v", errs, tc.wantErr)
			}
		})
	}
}

func TestBuildReadErrorIsReturned(t *testing.T) {
	s := apiruntime.NewScheme()
	_ = jobsetv1alpha2.AddToScheme(s)
	boom := errors.New("boom")
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return boom
		},
	}).Build()
	job := trainertesting.MakeTrainJob("tj", "default").Obj()
	info := mustInfo(t, job, trainertesting.MakeRuntimeSpec().ReplicatedJob(trainertesting.TrainerJob("t")).Obj())
	if _, err := (JobSet{}).Build(context.Background(), c, info, job); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the read error", err)
	}
}

// Trainer v2.3's PodSpecPatch carries terminationGracePeriodSeconds.
func TestRuntimePatchSetsTerminationGracePeriod(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
	job := trainertesting.MakeTrainJob("tj", "default").
		RuntimePatch("user", &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
			Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
				Name: "node",
				Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
					Spec: &trainer.PodSpecPatch{TerminationGracePeriodSeconds: ptr.To(int64(300))},
				}}},
			}}},
		}}).Obj()
	pod := podSpecOf(Render(mustInfo(t, job, spec), job), "node")
	if got := pod.Spec.TerminationGracePeriodSeconds; got == nil || *got != 300 {
		t.Fatalf("terminationGracePeriodSeconds = %v, want 300", got)
	}
}
