package standalonetest

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/test/testenv"
)

// kubeRayPod is a Pod shaped exactly as KubeRay v1.6.2 creates it
// (common/pod.go labelPod, and the controller reference): its labels, and
// no app.kubernetes.io/managed-by.
func kubeRayPod(rc *rayv1.RayCluster, name string, nodeType rayv1.RayNodeType, group string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: rc.Namespace, Name: name,
			Labels: map[string]string{
				"ray.io/is-ray-node":           "yes",
				"ray.io/cluster":               rc.Name,
				"ray.io/node-type":             string(nodeType),
				"ray.io/group":                 group,
				"ray.io/identifier":            rc.Name + "-" + string(nodeType),
				"app.kubernetes.io/name":       "kuberay",
				"app.kubernetes.io/created-by": "kuberay-operator",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "ray.io/v1", Kind: "RayCluster", Name: rc.Name, UID: rc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-" + string(nodeType), Image: "rayproject/ray:2.46.0"}}},
	}
}

// TestKubeRayPodsAreAdopted: a RayCluster that ran under KubeRay (its
// status written, its head and two workers made by KubeRay) is taken over
// when Gantry starts: its Pods get Gantry's managed-by label and an
// AdoptedPods event says so, and Gantry creates no second head or worker.
// A Pod of the cluster that KubeRay did not make, or that another object
// controls, is left alone.
func TestKubeRayPodsAreAdopted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	rc := cluster(ns, "moved", 2)
	g.Expect(env.Client.Create(ctx, rc)).To(Succeed())
	rc.Status.State = rayv1.Ready
	rc.Status.Head.PodName = "moved-head-k8s7x"
	g.Expect(env.Client.Status().Update(ctx, rc)).To(Succeed())
	pods := []*corev1.Pod{
		kubeRayPod(rc, "moved-head-k8s7x", rayv1.HeadNode, "headgroup"),
		kubeRayPod(rc, "moved-cpu-worker-2hd9q", rayv1.WorkerNode, "cpu"),
		kubeRayPod(rc, "moved-cpu-worker-v7x4c", rayv1.WorkerNode, "cpu"),
	}
	stranger := kubeRayPod(rc, "moved-debug", rayv1.WorkerNode, "cpu")
	stranger.OwnerReferences = nil
	for _, p := range append(pods, stranger) {
		g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	}

	startManager(t, &testenv.WriteCounter{}, "")

	g.Eventually(func(g Gomega) {
		for _, p := range pods {
			got := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
			g.Expect(got.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "gantry"), "pod %s", p.Name)
		}
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string {
		list := &corev1.EventList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}, timeout).Should(ContainElement(raycluster.ReasonAdoptedPods))

	// Gantry reconciles the adopted cluster with what it has: three Pods,
	// no new ones.
	g.Consistently(func(g Gomega) {
		g.Expect(podsOf(g, rc)).To(HaveLen(4), "the three adopted Pods and the stranger, nothing created")
	}, 5*time.Second).Should(Succeed())
	got := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(stranger), got)).To(Succeed())
	g.Expect(got.Labels).NotTo(HaveKey("app.kubernetes.io/managed-by"), "a Pod the cluster does not control")
}
