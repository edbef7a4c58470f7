//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

const (
	// convergeTimeout bounds every wait for the cluster to converge. It is
	// generous because the control plane shares two cores with other work;
	// a healthy run converges in seconds.
	convergeTimeout = 2 * time.Minute
	pollInterval    = 250 * time.Millisecond

	// e2eLabel marks namespaces this suite created, so leftovers of an
	// interrupted run are easy to find: kubectl get ns -l gantry.dev/e2e.
	e2eLabel = "gantry.dev/e2e"
)

var (
	// k8s reads straight from the API server (no cache), so every poll sees
	// the cluster as it is now.
	k8s       client.Client
	clientset kubernetes.Interface
)

func TestMain(m *testing.M) {
	if err := connect(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// connect builds the clients and checks what every test needs: Gantry's
// CRDs and at least one Ready node. Failing here (rather than skipping)
// keeps a broken setup from passing as "nothing to test".
func connect() error {
	if os.Getenv("KUBECONFIG") == "" {
		return errors.New("KUBECONFIG is not set; run `make test-e2e` (local control plane), " +
			"or `USE_EXISTING_CLUSTER=true KUBECONFIG=<file> make test-e2e` against a cluster running Gantry")
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading KUBECONFIG: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, rayv1.AddToScheme, trainerv1alpha1.AddToScheme,
		slinkyv1beta1.AddToScheme, jobsetv1alpha2.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	if clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), convergeTimeout)
	defer cancel()
	for _, list := range []client.ObjectList{
		&rayv1.RayClusterList{}, &trainerv1alpha1.TrainJobList{},
		&slinkyv1beta1.NodeSetList{}, &jobsetv1alpha2.JobSetList{},
	} {
		if err := k8s.List(ctx, list, client.Limit(1)); err != nil {
			return fmt.Errorf("listing %T at %s failed (are Gantry's and JobSet's CRDs installed?): %w", list, cfg.Host, err)
		}
	}
	var lastNodes string
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		nodes := &corev1.NodeList{}
		if err := k8s.List(ctx, nodes); err != nil {
			lastNodes = err.Error()
			return false, nil
		}
		lastNodes = fmt.Sprintf("%d nodes, none Ready", len(nodes.Items))
		for i := range nodes.Items {
			if nodeReady(&nodes.Items[i]) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("no Ready node at %s: %s", cfg.Host, lastNodes)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// newGomega returns a Gomega whose Eventually uses the suite's timeout and
// polling interval.
func newGomega(t *testing.T) *WithT {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(convergeTimeout)
	g.SetDefaultEventuallyPollingInterval(pollInterval)
	return g
}

// newNamespace creates a namespace for one test and deletes it when the
// test ends, waiting until it is gone so the next test (and the next run
// on a long-lived cluster) starts clean. When the test failed, the
// namespace's pods, events and Gantry objects are logged first.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	g := newGomega(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "e2e-" + prefix + "-",
		Labels:       map[string]string{e2eLabel: "true"},
	}}
	g.Expect(k8s.Create(t.Context(), ns)).To(Succeed())
	name := ns.Name
	t.Logf("namespace %s", name)

	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run.
		ctx := context.Background()
		if t.Failed() {
			dumpNamespace(t, ctx, name)
		}
		err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			expectGone(g, ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}).WithContext(ctx).Should(Succeed(), "namespace %s was not deleted", name)
	})

	// Pods name the "default" ServiceAccount, and admission rejects them
	// until kube-controller-manager has created it.
	g.Eventually(func() error {
		return k8s.Get(t.Context(), types.NamespacedName{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
	}).Should(Succeed(), "the default ServiceAccount of %s was not created", name)
	return name
}

// loadSample decodes a file of config/samples strictly: a field the Go
// type does not know fails the test, so samples and API types cannot
// drift apart unnoticed.
func loadSample[T any](t *testing.T, file string) *T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", file))
	if err != nil {
		t.Fatalf("reading sample: %v", err)
	}
	obj := new(T)
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("sample %s does not decode strictly: %v", file, err)
	}
	return obj
}

// createStrict creates obj with server-side strict field validation, so the
// CRD schema must know every field too (unknown fields are an error, not a
// warning that silently drops them).
func createStrict(g *WithT, ctx context.Context, obj client.Object) {
	g.Expect(k8s.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed())
}

// update re-reads obj, applies mutate and writes it, retrying conflicts
// with the operator's own writes.
func update[T client.Object](g *WithT, ctx context.Context, obj T, mutate func(T)) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return k8s.Update(ctx, obj)
	})).To(Succeed())
}

// expectGone asserts (inside Eventually) that obj no longer exists.
func expectGone(g Gomega, ctx context.Context, obj client.Object) {
	err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s still exists (err=%v)", obj, obj.GetName(), err)
}

func listPods(g Gomega, ctx context.Context, ns string, labels map[string]string) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
	return pods.Items
}

// expectScheduledRunningReady asserts the pod was bound to a node by the
// scheduler and the node's kubelet (kwok's, on the local control plane)
// reports it Running and Ready.
func expectScheduledRunningReady(g Gomega, pod *corev1.Pod) {
	g.Expect(pod.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not scheduled", pod.Name)
	g.Expect(pod.DeletionTimestamp).To(BeNil(), "pod %s is being deleted", pod.Name)
	g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", pod.Name)
	g.Expect(podConditionTrue(pod, corev1.PodScheduled)).To(BeTrue(), "pod %s has no PodScheduled=True", pod.Name)
	g.Expect(podConditionTrue(pod, corev1.PodReady)).To(BeTrue(), "pod %s is not Ready", pod.Name)
}

func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// expectControlledBy asserts owner is the controller owner of obj with
// blockOwnerDeletion, which is what lets the garbage collector delete obj
// (and, with foreground deletion, wait for it) when owner goes.
func expectControlledBy(g Gomega, obj, owner client.Object) {
	ref := metav1.GetControllerOf(obj)
	g.Expect(ref).NotTo(BeNil(), "%T %s has no controller owner", obj, obj.GetName())
	g.Expect(ref.UID).To(Equal(owner.GetUID()), "%T %s is controlled by %s/%s", obj, obj.GetName(), ref.Kind, ref.Name)
	g.Expect(ref.BlockOwnerDeletion).To(HaveValue(BeTrue()), "%T %s: blockOwnerDeletion", obj, obj.GetName())
}

// eventsFor lists the core/v1 Events `kubectl describe` shows for obj.
func eventsFor(g Gomega, ctx context.Context, obj client.Object) []corev1.Event {
	events := &corev1.EventList{}
	g.Expect(k8s.List(ctx, events, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{"involvedObject.uid": string(obj.GetUID())})).To(Succeed())
	return events.Items
}

func conditionTrue(conditions []metav1.Condition, condType string) bool {
	return meta.IsStatusConditionTrue(conditions, condType)
}

// dumpNamespace logs what a failed test left behind: usually enough to tell
// a scheduling problem from an operator problem without a live cluster.
func dumpNamespace(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "--- state of namespace %s\n", ns)
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(ns)); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s node=%q phase=%s ready=%t deleting=%t\n",
				p.Name, p.Spec.NodeName, p.Status.Phase, podConditionTrue(&p, corev1.PodReady), p.DeletionTimestamp != nil)
		}
	}
	objects := []client.ObjectList{
		&rayv1.RayClusterList{}, &trainerv1alpha1.TrainJobList{}, &jobsetv1alpha2.JobSetList{},
		&slinkyv1beta1.ControllerList{}, &slinkyv1beta1.NodeSetList{},
	}
	for _, list := range objects {
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			continue
		}
		items, _ := meta.ExtractList(list)
		for _, item := range items {
			status, _ := yaml.Marshal(statusOf(item))
			fmt.Fprintf(&b, "%T %s status:\n%s", item, item.(client.Object).GetName(), status)
		}
	}
	events := &corev1.EventList{}
	if err := k8s.List(ctx, events, client.InNamespace(ns)); err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s %s %s/%s: %s\n", e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}
	t.Log(b.String())
}

func statusOf(obj runtime.Object) any {
	switch o := obj.(type) {
	case *rayv1.RayCluster:
		return o.Status
	case *trainerv1alpha1.TrainJob:
		return o.Status
	case *jobsetv1alpha2.JobSet:
		return o.Status
	case *slinkyv1beta1.Controller:
		return o.Status
	case *slinkyv1beta1.NodeSet:
		return o.Status
	}
	return nil
}

// requireSimulatedKubelet skips a test that steers pods through kwok's
// stages (hack/kwok/stages.yaml: pods that run for a set time or exit with a
// set code on an annotation, slurmd pods Ready without a slurmctld): on a
// cluster with real nodes, such as kind, a real kubelet runs the containers
// instead. The local control plane's nodes carry kwok's annotation.
func requireSimulatedKubelet(t *testing.T) {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := k8s.List(t.Context(), nodes); err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	for _, n := range nodes.Items {
		if n.Annotations["kwok.x-k8s.io/node"] == "fake" {
			return
		}
	}
	t.Skip("needs kwok's simulated kubelet (pods steered by hack/kwok/stages.yaml annotations); " +
		"this cluster's nodes are real, so it runs only in `make test-e2e` on the local control plane")
}
