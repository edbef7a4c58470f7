package nodeset_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slurmworkload "github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// fakeClients is the ClientSource of the tests: one fake slurmrestd per
// Controller. A Controller without one has no RestApi, unless a RestApi
// object names it: then, as after a manager restart with an unreadable JWT
// key, its client cannot be had.
type fakeClients struct {
	reader client.Reader
	mu     sync.Mutex
	m      map[types.NamespacedName]*fake.Client
}

func (f *fakeClients) ClientFor(ctx context.Context, key types.NamespacedName) (slurm.Client, string, error) {
	f.mu.Lock()
	c, ok := f.m[key]
	f.mu.Unlock()
	if ok {
		return c, "fake-restapi", nil
	}
	list := &slinkyv1beta1.RestApiList{}
	if err := f.reader.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		return nil, "", err
	}
	for _, ra := range list.Items {
		if ra.Spec.ControllerRef.Name == key.Name {
			return nil, ra.Name, fmt.Errorf("no fake client for %s yet", key)
		}
	}
	return nil, "", nil
}

func (f *fakeClients) add(key types.NamespacedName) *fake.Client {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := fake.New()
	f.m[key] = c
	return c
}

// remove drops the Controller's client, as when its RestApi is deleted.
func (f *fakeClients) remove(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}

type harness struct {
	t       *testing.T
	ctx     context.Context
	c       client.Client
	mgr     manager.Manager
	clients *fakeClients
	ns      string
}

// startHarness runs the NodeSet reconciler the way the Gantry manager does:
// Pods and Services are cached only when labelled managed-by=gantry.
func startHarness(t *testing.T) *harness {
	t.Helper()
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	clients := &fakeClients{reader: env.Client, m: map[types.NamespacedName]*fake.Client{}}
	mgr := managertest.Start(t, env, func(mgr ctrl.Manager) error {
		if err := slurmworkload.Integration().SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return err
		}
		r, err := nodeset.New(mgr, nodeset.Options{Options: workload.Options{MaxConcurrentReconciles: 2}, Clients: clients})
		if err != nil {
			return err
		}
		return r.SetupWithManager(mgr)
	})
	return &harness{t: t, ctx: context.Background(), c: env.Client, mgr: mgr, clients: clients}
}

func (h *harness) namespace(g Gomega, name string) {
	h.ns = name
	g.Expect(h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

func (h *harness) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: h.ns, Name: name}
}

// pods lists the NodeSet's pods sorted by name.
func (h *harness) pods(g Gomega, nodeSet string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns), client.MatchingLabels{"app.kubernetes.io/instance": nodeSet})).To(Succeed())
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// liveNames are the names of pods not being deleted.
func (h *harness) liveNames(nodeSet string) func(Gomega) []string {
	return func(g Gomega) []string {
		var out []string
		for _, p := range h.pods(g, nodeSet) {
			if p.DeletionTimestamp == nil {
				out = append(out, p.Name)
			}
		}
		return out
	}
}

// kubelet plays the kubelet and slurmd for the NodeSet's pods: it marks
// them Running and Ready and registers their Slurm nodes (IDLE) in the
// fake, unless a node is already known. There is no real kubelet in the
// test, so this is how pods come up.
func (h *harness) kubelet(g Gomega, nodeSet string, f *fake.Client) {
	for _, p := range h.pods(g, nodeSet) {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			// A patch, as a kubelet sends: the operator may be patching the
			// pod's metadata at the same time.
			patch := client.MergeFrom(p.DeepCopy())
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			g.Expect(client.IgnoreNotFound(h.c.Status().Patch(h.ctx, &p, patch))).To(Succeed())
		}
		if f == nil {
			continue
		}
		if _, ok := f.Node(nodeset.SlurmNodeName(&p)); !ok {
			f.SetNode(slurm.Node{Name: nodeset.SlurmNodeName(&p), State: []slurm.NodeState{slurm.NodeStateIdle}})
		}
	}
}

// onePodOn creates node and a one-pod NodeSet of the "slurm" Controller,
// binds its pod to node and runs it (see kubelet); it returns the pod.
func (h *harness) onePodOn(g Gomega, nodeSet string, node *corev1.Node, f *fake.Client) *corev1.Pod {
	g.Expect(h.c.Create(h.ctx, node)).To(Succeed())
	g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet(nodeSet, h.ns, "slurm").Obj())).To(Succeed())
	g.Eventually(h.liveNames(nodeSet)).Should(Equal([]string{nodeSet + "-0"}))
	pod := &corev1.Pod{}
	g.Expect(h.c.Get(h.ctx, h.key(nodeSet+"-0"), pod)).To(Succeed())
	g.Expect(h.c.SubResource("binding").Create(h.ctx, pod, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: h.ns},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node.Name},
	})).To(Succeed())
	h.kubelet(g, nodeSet, f)
	return pod
}

// poke changes an annotation of the pod, which wakes its NodeSet: Slurm
// sends no event when a job ends.
func (h *harness) poke(g Gomega, pod string) {
	p := &corev1.Pod{}
	g.Expect(h.c.Get(h.ctx, h.key(pod), p)).To(Succeed())
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["test.gantry.dev/poke"] = fmt.Sprint(time.Now().UnixNano())
	g.Expect(h.c.Patch(h.ctx, p, patch)).To(Succeed())
}

func (h *harness) nodeSet(g Gomega, name string) *slinkyv1beta1.NodeSet {
	n := &slinkyv1beta1.NodeSet{}
	g.Expect(h.c.Get(h.ctx, h.key(name), n)).To(Succeed())
	return n
}

func (h *harness) updateNodeSet(g Gomega, name string, mutate func(*slinkyv1beta1.NodeSet)) {
	g.Eventually(func() error {
		n := &slinkyv1beta1.NodeSet{}
		if err := h.c.Get(h.ctx, h.key(name), n); err != nil {
			return err
		}
		mutate(n)
		return h.c.Update(h.ctx, n)
	}).Should(Succeed())
}

// withoutWatch is the manager's client as the client.WithWatch that
// testenv.WriteCounter wraps; the reconciler never watches.
type withoutWatch struct{ client.Client }

func (withoutWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, fmt.Errorf("not supported")
}
