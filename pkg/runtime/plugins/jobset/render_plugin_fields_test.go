package jobset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// TestRenderExtraInitContainers: init containers a plugin adds come after
// the template's, whole, in order; one named like a template init
// container replaces it in place; other replicated jobs get none.
func TestRenderExtraInitContainers(t *testing.T) {
	trainerJob := trainertesting.TrainerJob("t:1")
	trainerJob.Template.Spec.Template.Spec.InitContainers = []corev1.Container{
		{Name: "wait", Image: "busybox"},
		{Name: "setup", Image: "old:1"},
	}
	spec := trainertesting.MakeRuntimeSpec().
		ReplicatedJob(trainertesting.ReplicatedJob("helper", "", trainertesting.MakeContainer("helper", "h:1").Obj())).
		ReplicatedJob(trainerJob).Obj()
	job := trainertesting.MakeTrainJob("tj", "default").Obj()
	info := mustInfo(t, job, spec)
	ps := info.TrainerPodSet()
	installer := corev1.Container{Name: "installer", Image: "i:1", Command: []string{"/bin/sh", "-c", "true"},
		VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v", ReadOnly: true}}}
	ps.ExtraInitContainers = []corev1.Container{installer, {Name: "setup", Image: "new:2"}}

	js := Render(info, job)
	want := []corev1.Container{{Name: "wait", Image: "busybox"}, {Name: "setup", Image: "new:2"}, installer}
	if diff := cmp.Diff(want, podSpecOf(js, trainer.TrainerNodeName).Spec.InitContainers); diff != "" {
		t.Errorf("trainer init containers (-want +got):\n%s", diff)
	}
	if got := podSpecOf(js, "helper").Spec.InitContainers; len(got) != 0 {
		t.Errorf("helper job got init containers %v", got)
	}
	// Render must not alias the PodSet's containers.
	podSpecOf(js, trainer.TrainerNodeName).Spec.InitContainers[2].VolumeMounts[0].Name = "changed"
	if ps.ExtraInitContainers[0].VolumeMounts[0].Name != "v" {
		t.Error("the rendered init container shares its mounts with the PodSet")
	}
}

// TestRenderTrainerCommandAndArgs: a plugin's TrainerCommand replaces the
// node container's command also without spec.trainer; with
// TrainerArgsInCommand the TrainJob's args stay off the container and the
// runtime's stay on it.
func TestRenderTrainerCommandAndArgs(t *testing.T) {
	node := trainertesting.MakeContainer(trainer.TrainerNodeName, "t:1").Command("runtime-cmd").Obj()
	node.Args = []string{"--runtime-arg"}
	spec := trainertesting.MakeRuntimeSpec().
		ReplicatedJob(trainertesting.ReplicatedJob(trainer.TrainerNodeName, trainer.AncestorTrainer, node)).Obj()
	cases := map[string]struct {
		job           *trainer.TrainJob
		command       []string
		argsInCommand bool
		wantCommand   []string
		wantArgs      []string
	}{
		"TrainJob command and args": {
			job:         trainertesting.MakeTrainJob("tj", "default").Command("job-cmd").Args("--job-arg").Obj(),
			wantCommand: []string{"job-cmd"}, wantArgs: []string{"--job-arg"},
		},
		"plugin command, TrainJob args kept": {
			job:     trainertesting.MakeTrainJob("tj", "default").Command("job-cmd").Args("--job-arg").Obj(),
			command: []string{"wrapped"}, wantCommand: []string{"wrapped"}, wantArgs: []string{"--job-arg"},
		},
		"plugin command with the args in it": {
			job:     trainertesting.MakeTrainJob("tj", "default").Command("job-cmd").Args("--job-arg").Obj(),
			command: []string{"wrapped", "job-cmd --job-arg"}, argsInCommand: true,
			wantCommand: []string{"wrapped", "job-cmd --job-arg"}, wantArgs: []string{"--runtime-arg"},
		},
		"plugin command without spec.trainer": {
			job:     trainertesting.MakeTrainJob("tj", "default").Obj(),
			command: []string{"wrapped"}, argsInCommand: true,
			wantCommand: []string{"wrapped"}, wantArgs: []string{"--runtime-arg"},
		},
		"nothing to apply": {
			job:         trainertesting.MakeTrainJob("tj", "default").Obj(),
			wantCommand: []string{"runtime-cmd"}, wantArgs: []string{"--runtime-arg"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info := mustInfo(t, tc.job, spec)
			info.TrainerCommand = tc.command
			info.TrainerArgsInCommand = tc.argsInCommand
			c := podSpecOf(Render(info, tc.job), trainer.TrainerNodeName).Spec.Containers[0]
			if diff := cmp.Diff(tc.wantCommand, c.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantArgs, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}
