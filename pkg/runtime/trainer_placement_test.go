package runtime

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// Where a TrainJob's spec.trainer lands, as in Trainer v2.3.0:
//   - image, command, args: the container "node" of every replicated job
//     labelled trainjob-ancestor-step=trainer (jobset/builder.go Trainer);
//   - env: the same containers, plus, when the MPI policy has
//     runLauncherAsNode, the container "node" of the replicated job named
//     "node" (jobset/builder.go Trainer);
//   - resourcesPerNode, merged per key onto the runtime's resources
//     (util/trainingruntime MergeResourceRequirements): the trainer
//     containers when the runtime has an mlPolicy, plus the MPI "node" job's
//     "node" container under runLauncherAsNode (core/trainingruntime.go
//     newRuntimeInfo).
func TestTrainerFieldsPlacementAsUpstream(t *testing.T) {
	runtimeRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
	}
	mergedRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi"), "example.com/fpga": resource.MustParse("1")},
	}
	job := trainertesting.MakeTrainJob("tj", "default").Image("user:2").Command("train").Args("--lr", "0.1").Env("USER_ENV", "1").
		ResourcesPerNode(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}, corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}).Obj()

	// want describes one container of the rendered JobSet.
	type want struct {
		image     string
		command   []string
		args      []string
		userEnv   bool
		resources corev1.ResourceRequirements
	}
	untouched := func(image string, command ...string) want {
		return want{image: image, command: command, resources: runtimeRes}
	}
	overridden := func(res corev1.ResourceRequirements) want {
		return want{image: "user:2", command: []string{"train"}, args: []string{"--lr", "0.1"}, userEnv: true, resources: res}
	}

	// The single-node-job layout: initializers, the trainer job "node"
	// with a sidecar, and an unlabelled job that also has a "node" container.
	singleJob := func(w *trainertesting.RuntimeSpecWrapper) *trainer.TrainingRuntimeSpec {
		trainerJob := trainertesting.ReplicatedJob("node", trainer.AncestorTrainer,
			trainertesting.MakeContainer("node", "rt:1").Command("rt-cmd").Resources(runtimeRes.Requests, runtimeRes.Limits).Obj(),
			trainertesting.MakeContainer("helper", "helper:1").Command("helper-cmd").Resources(runtimeRes.Requests, runtimeRes.Limits).Obj())
		aux := trainertesting.ReplicatedJob("aux", "",
			trainertesting.MakeContainer("node", "aux:1").Command("aux-cmd").Resources(runtimeRes.Requests, runtimeRes.Limits).Obj())
		return w.ReplicatedJob(trainertesting.InitializerJobs()...).ReplicatedJob(trainerJob, aux).Obj()
	}
	singleJobWant := func(trainerNode want) map[string]map[string]want {
		return map[string]map[string]want{
			"node": {"node": trainerNode, "helper": untouched("helper:1", "helper-cmd")},
			"aux":  {"node": untouched("aux:1", "aux-cmd")},
		}
	}
	// The MPI layout of deepspeed-distributed and mlx-distributed: workers
	// "node" running sshd, the launcher labelled as the trainer step.
	mpiJobs := func(runLauncherAsNode bool) *trainer.TrainingRuntimeSpec {
		spec := trainertesting.MakeRuntimeSpec().NumNodes(1).MPI(1, runLauncherAsNode).ReplicatedJob(trainertesting.MPIJobs("mpi:1")...).Obj()
		for i := range spec.Template.Spec.ReplicatedJobs {
			spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.Containers[0].Resources = *runtimeRes.DeepCopy()
		}
		return spec
	}

	cases := map[string]struct {
		spec *trainer.TrainingRuntimeSpec
		want map[string]map[string]want // replicated job -> container -> want
	}{
		"torch":   {spec: singleJob(trainertesting.MakeRuntimeSpec().Torch(nil)), want: singleJobWant(overridden(mergedRes))},
		"jax":     {spec: singleJob(trainertesting.MakeRuntimeSpec().JAX()), want: singleJobWant(overridden(mergedRes))},
		"xgboost": {spec: singleJob(trainertesting.MakeRuntimeSpec().XGBoost()), want: singleJobWant(overridden(mergedRes))},
		"plainml": {spec: singleJob(trainertesting.MakeRuntimeSpec().NumNodes(1)), want: singleJobWant(overridden(mergedRes))},
		"no mlPolicy: resources stay the runtime's": {spec: singleJob(trainertesting.MakeRuntimeSpec()), want: singleJobWant(overridden(runtimeRes))},
		"mpi, runLauncherAsNode false: workers keep the runtime's everything": {
			spec: mpiJobs(false),
			want: map[string]map[string]want{
				"launcher": {"node": overridden(mergedRes)},
				"node":     {"node": untouched("mpi:1", "/usr/sbin/sshd", "-De")},
			},
		},
		"mpi, runLauncherAsNode true: workers get env and resources, not image, command or args": {
			spec: mpiJobs(true),
			want: map[string]map[string]want{
				"launcher": {"node": overridden(mergedRes)},
				"node":     {"node": want{image: "mpi:1", command: []string{"/usr/sbin/sshd", "-De"}, userEnv: true, resources: mergedRes}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if errs := newRuntime(t).Validate(nil, job, tc.spec); len(errs) > 0 {
				t.Fatalf("validation: %v", errs)
			}
			res, err := newRuntime(t).NewObjects(context.Background(), job, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			js := jobSetOf(t, res.Components)
			for rJobName, containers := range tc.want {
				for cName, w := range containers {
					c := renderedContainer(t, js, rJobName, cName)
					got := want{
						image: c.Image, command: c.Command, args: c.Args,
						userEnv:   slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "USER_ENV" }),
						resources: c.Resources,
					}
					if diff := cmp.Diff(w, got, cmp.AllowUnexported(want{})); diff != "" {
						t.Errorf("%s/%s (-want +got):\n%s", rJobName, cName, diff)
					}
				}
			}
			for _, init := range []string{trainer.DatasetInitializerName, trainer.ModelInitializerName} {
				if tc.want["aux"] == nil {
					break
				}
				if c := renderedContainer(t, js, init, init); c.Image != init+":v1" || len(c.Env) > 0 {
					t.Errorf("%s got trainer fields: image %q env %v", init, c.Image, c.Env)
				}
			}
		})
	}
}

// The TrainJob's resource claims merge by name onto the runtime's, as
// upstream's strategic merge (patchMergeKey "name") does.
func TestResourcesPerNodeClaimsMergeByName(t *testing.T) {
	node := trainertesting.MakeContainer("node", "t:1").Obj()
	node.Resources.Claims = []corev1.ResourceClaim{{Name: "runtime-claim"}, {Name: "shared", Request: "runtime"}}
	spec := trainertesting.MakeRuntimeSpec().Torch(nil).
		ReplicatedJob(trainertesting.ReplicatedJob("node", trainer.AncestorTrainer, node)).Obj()
	job := trainertesting.MakeTrainJob("tj", "default").Obj()
	job.Spec.Trainer = &trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{
		Claims: []corev1.ResourceClaim{{Name: "shared", Request: "user"}, {Name: "user-claim"}},
	}}
	res, err := newRuntime(t).NewObjects(context.Background(), job, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := renderedContainer(t, jobSetOf(t, res.Components), "node", "node").Resources.Claims
	byName := map[string]string{}
	for _, c := range got {
		byName[c.Name] = c.Request
	}
	wantByName := map[string]string{"runtime-claim": "", "shared": "user", "user-claim": ""}
	if diff := cmp.Diff(wantByName, byName); diff != "" || len(got) != 3 {
		t.Errorf("claims %v (-want +got by name):\n%s", got, diff)
	}
}

func renderedContainer(t *testing.T, js *jobsetv1alpha2.JobSet, rJob, container string) corev1.Container {
	t.Helper()
	for _, rj := range js.Spec.ReplicatedJobs {
		if rj.Name != rJob {
			continue
		}
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			if c.Name == container {
				return c
			}
		}
	}
	t.Fatalf("no container %s in replicated job %s", container, rJob)
	return corev1.Container{}
}
