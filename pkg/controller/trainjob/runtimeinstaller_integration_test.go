package trainjob

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// runtimeYAML is a ClusterTrainingRuntime as the chart renders one into
// the runtimes ConfigMap.
func runtimeYAML(name, image string) string {
	return `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: ` + name + `
  labels:
    app.kubernetes.io/name: gantry
    app.kubernetes.io/instance: rel
    app.kubernetes.io/managed-by: Helm
    trainer.kubeflow.org/webhook-validation: disabled
spec:
  mlPolicy:
    numNodes: 1
    torch: {}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: ` + image + `
`
}

func runtimeImage(g gomega.Gomega, c client.Client, name string) string {
	rt := &trainer.ClusterTrainingRuntime{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, rt)).To(gomega.Succeed())
	return rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image
}

// TestRuntimeInstallerAppliesTheChartsRuntimes: the manager installs the
// runtimes of the chart's ConfigMap (one-step helm install), takes over
// one an earlier chart of the same release created, leaves a user's
// runtime of the same name alone, puts back one that is deleted, and
// deletes one the ConfigMap no longer lists.
func TestRuntimeInstallerAppliesTheChartsRuntimes(t *testing.T) {
	h := startHarness(t)
	ctx := context.Background()
	g := gomega.NewWithT(t)
	const ns = "runtime-installer"
	h.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})

	// A user's runtime, and one the same release's chart made itself.
	user := trainertesting.MakeClusterTrainingRuntime("ri-user").Spec(torchRuntimeSpec()).Obj()
	helmMade := trainertesting.MakeClusterTrainingRuntime("ri-helm").Spec(torchRuntimeSpec()).Obj()
	helmMade.Labels = map[string]string{labelInstance: "rel", "app.kubernetes.io/managed-by": "Helm"}
	helmMade.Annotations = map[string]string{annotationHelmRelease: "rel", annotationHelmReleaseNamespace: ns}
	// The same release name in another namespace is another release.
	otherRelease := trainertesting.MakeClusterTrainingRuntime("ri-other").Spec(torchRuntimeSpec()).Obj()
	otherRelease.Labels = map[string]string{labelInstance: "rel", "app.kubernetes.io/managed-by": "Helm"}
	otherRelease.Annotations = map[string]string{annotationHelmRelease: "rel", annotationHelmReleaseNamespace: "elsewhere"}
	h.create(t, user, helmMade, otherRelease)
	t.Cleanup(func() {
		for _, n := range []string{"ri-a", "ri-b", "ri-user", "ri-helm", "ri-other"} {
			_ = h.c.Delete(ctx, &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	})

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shipped", Labels: map[string]string{labelInstance: "rel"}},
		Data: map[string]string{
			"ri-a.yaml":     runtimeYAML("ri-a", "torch:a"),
			"ri-b.yaml":     runtimeYAML("ri-b", "torch:b"),
			"ri-user.yaml":  runtimeYAML("ri-user", "torch:chart"),
			"ri-helm.yaml":  runtimeYAML("ri-helm", "torch:chart"),
			"ri-other.yaml": runtimeYAML("ri-other", "torch:chart"),
		},
	}
	h.create(t, cm)
	g.Expect(setupRuntimeInstaller(h.mgr, ns+"/shipped")).To(gomega.Succeed())

	set := ns + ".shipped"
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(runtimeImage(g, h.c, "ri-a")).To(gomega.Equal("torch:a"))
		g.Expect(runtimeImage(g, h.c, "ri-b")).To(gomega.Equal("torch:b"))
		g.Expect(runtimeImage(g, h.c, "ri-helm")).To(gomega.Equal("torch:chart"), "the release's own runtime is taken over")
		rt := &trainer.ClusterTrainingRuntime{}
		g.Expect(h.c.Get(ctx, client.ObjectKey{Name: "ri-a"}, rt)).To(gomega.Succeed())
		g.Expect(rt.Labels).To(gomega.HaveKeyWithValue(LabelRuntimeSet, set))
		g.Expect(rt.Labels).To(gomega.HaveKeyWithValue("app.kubernetes.io/managed-by", "gantry"))
	}).WithTimeout(30 * time.Second).Should(gomega.Succeed())
	g.Consistently(func(g gomega.Gomega) {
		g.Expect(runtimeImage(g, h.c, "ri-user")).To(gomega.Equal("torch:runtime"), "a user's runtime of the same name is left alone")
		g.Expect(runtimeImage(g, h.c, "ri-other")).To(gomega.Equal("torch:runtime"), "a runtime of a release of the same name in another namespace is left alone")
	}).WithTimeout(2 * time.Second).Should(gomega.Succeed())

	// Deleted: it comes back.
	g.Expect(h.c.Delete(ctx, &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "ri-b"}})).To(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		rt := &trainer.ClusterTrainingRuntime{}
		g.Expect(h.c.Get(ctx, client.ObjectKey{Name: "ri-b"}, rt)).To(gomega.Succeed())
		g.Expect(rt.DeletionTimestamp.IsZero()).To(gomega.BeTrue())
	}).WithTimeout(30 * time.Second).Should(gomega.Succeed())

	// Turned off in the chart (the ConfigMap drops it): deleted once the
	// installer runs again, here on the next event of one of its runtimes.
	delete(cm.Data, "ri-a.yaml")
	g.Expect(h.c.Update(ctx, cm)).To(gomega.Succeed())
	g.Expect(h.c.Delete(ctx, &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "ri-b"}})).To(gomega.Succeed())
	g.Eventually(func() bool {
		err := h.c.Get(ctx, client.ObjectKey{Name: "ri-a"}, &trainer.ClusterTrainingRuntime{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(30*time.Second).Should(gomega.BeTrue(), "ri-a, no longer listed, was not deleted")
	g.Expect(runtimeImage(g, h.c, "ri-user")).To(gomega.Equal("torch:runtime"))
}
