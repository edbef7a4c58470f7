package trainjob

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/pkg/runtime/plugins/coscheduling"
	"github.com/gantry-dev/gantry/test/testenv"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// TestCoschedulingWithAndWithoutThePodGroupCRD: without scheduler-plugins'
// CRD a coscheduling runtime still runs (a Warning says gang scheduling is
// off); once the CRD is installed, a TrainJob gets a PodGroup sized to all
// its pods, owned by the TrainJob, and every pod carries the group label.
func TestCoschedulingWithAndWithoutThePodGroupCRD(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	spec := trainertesting.MakeRuntimeSpec().Torch(nil).Coscheduling(ptr.To[int32](90)).
		ReplicatedJob(trainertesting.TrainerJob("torch:runtime")).Obj()
	rtName := h.clusterRuntime(t, ns, "gang", spec)

	// Before the CRD exists.
	h.create(t, newTrainJob(ns, "early", rtName).NumNodes(2).Obj())
	h.eventuallyJobSet(t, ns, "early")
	g.Eventually(func(g gomega.Gomega) []string { return h.eventReasons(g, ns, "early") }).
		WithTimeout(30 * time.Second).Should(gomega.ContainElement(ReasonRuntimeWarning))

	crd := testenv.MinimalCRD(coscheduling.PodGroupGVK)
	g.Expect(h.c.Create(context.Background(), crd)).To(gomega.Succeed())
	t.Cleanup(func() { _ = h.c.Delete(context.Background(), crd) })
	g.Eventually(func(g gomega.Gomega) {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(h.c.Get(context.Background(), types.NamespacedName{Name: crd.Name}, cur)).To(gomega.Succeed())
		established := false
		for _, c := range cur.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		g.Expect(established).To(gomega.BeTrue())
	}).WithTimeout(30 * time.Second).Should(gomega.Succeed())

	h.create(t, newTrainJob(ns, "gang", rtName).NumNodes(3).Obj())
	js := h.eventuallyJobSet(t, ns, "gang")
	tj := h.eventuallyCreated(t, ns, "gang")

	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(coscheduling.PodGroupGVK)
	g.Eventually(func() error {
		return h.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "gang"}, pg)
	}).WithTimeout(30 * time.Second).Should(gomega.Succeed())
	minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	g.Expect(minMember).To(gomega.Equal(int64(3)), "minMember counts every pod of the job")
	timeout, _, _ := unstructured.NestedInt64(pg.Object, "spec", "scheduleTimeoutSeconds")
	g.Expect(timeout).To(gomega.Equal(int64(90)))
	g.Expect(pg.GetOwnerReferences()).To(gomega.ContainElement(gomega.HaveField("UID", tj.UID)))
	for _, rj := range js.Spec.ReplicatedJobs {
		g.Expect(rj.Template.Spec.Template.Labels).To(gomega.HaveKeyWithValue(coscheduling.PodGroupLabel, "gang"), "pods of %s", rj.Name)
	}
}
