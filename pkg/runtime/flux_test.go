package runtime

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// TestNewObjectsFlux: a Flux runtime builds; the CURVE Secret (create-only)
// and the ConfigMap come before the JobSet whose pods mount them, and an
// existing Secret is not built again.
func TestNewObjectsFlux(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().NumNodes(1).Flux().ReplicatedJob(trainertesting.TrainerJob("ubuntu:jammy")).Obj()
	job := trainertesting.MakeTrainJob("fj", "default").NumNodes(2).Command("hostname").Obj()

	res, err := newRuntime(t).NewObjects(context.Background(), job, spec)
	if err != nil {
		t.Fatal(err)
	}
	type comp struct {
		Kind, Name string
		CreateOnly bool
	}
	var got []comp
	for _, c := range res.Components {
		got = append(got, comp{c.Object.GetObjectKind().GroupVersionKind().Kind, c.Object.GetName(), c.CreateOnly})
	}
	want := []comp{{"Secret", "fj-flux-curve", true}, {"ConfigMap", "fj-flux-entrypoint", false}, {"JobSet", "fj", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("components (-want +got):\n%s", diff)
	}
	pod := jobSetOf(t, res.Components).Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "flux-installer" {
		t.Errorf("init containers %+v", pod.InitContainers)
	}
	if diff := cmp.Diff([]string{"/bin/bash", "/etc/flux-config/entrypoint.sh", "hostname"}, pod.Containers[0].Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}

	existing := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fj-flux-curve", Namespace: "default"}}
	res, err = newRuntime(t, existing).NewObjects(context.Background(), job, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Components {
		if _, ok := c.Object.(*corev1.Secret); ok {
			t.Error("the existing CURVE Secret was built again")
		}
	}
}
