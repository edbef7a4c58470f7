//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/test/testenv"
)

const (
	// convergeTimeout bounds every wait for the cluster to converge (it is
	// Eventually's default timeout). It is generous because the control
	// plane shares two cores with other work; a healthy run converges in
	// seconds.
	convergeTimeout = 2 * time.Minute
	pollInterval    = 250 * time.Millisecond

	// e2eLabel marks namespaces this suite created, so leftovers of an
	// interrupted run are easy to find: kubectl get ns -l gantry.dev/e2e.
	e2eLabel = "gantry.dev/e2e"
)

// repoRoot is the repository, relative to this package's directory (where
// go test and ginkgo run the test binary).
var repoRoot = filepath.Join("..", "..")

var (
	// k8s reads straight from the API server (no cache), so every poll sees
	// the cluster as it is now.
	k8s       client.Client
	clientset kubernetes.Interface
	// restConfig is the KUBECONFIG the clients were built from.
	restConfig *rest.Config
)

// newClients builds the clients from KUBECONFIG.
func newClients() error {
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
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	k8s, clientset, restConfig = c, cs, cfg
	return nil
}

// checkCluster checks what every spec needs: Gantry's and JobSet's CRDs
// and at least one Ready node.
func checkCluster(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, convergeTimeout)
	defer cancel()
	for _, list := range []client.ObjectList{
		&rayv1.RayClusterList{}, &trainerv1alpha1.TrainJobList{},
		&slinkyv1beta1.NodeSetList{}, &jobsetv1alpha2.JobSetList{},
	} {
		if err := k8s.List(ctx, list, client.Limit(1)); err != nil {
			return fmt.Errorf("listing %T at %s failed (are Gantry's and JobSet's CRDs installed?): %w", list, restConfig.Host, err)
		}
	}
	var lastNodes string
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
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
		return fmt.Errorf("no Ready node at %s: %s", restConfig.Host, lastNodes)
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

// newNamespace creates a namespace for the current spec (or, called in a
// BeforeAll, for an Ordered container's specs) and deletes it when the spec
// ends, waiting until it is gone so the next spec (and the next run on a
// long-lived cluster) starts clean. When a spec fails, the namespace's
// pods, Gantry objects and events, and the manager log lines that name it,
// are added to the spec's report before any cleanup runs.
func newNamespace(ctx context.Context, prefix string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "e2e-" + prefix + "-",
		Labels:       map[string]string{e2eLabel: "true"},
	}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	name := ns.Name
	GinkgoWriter.Printf("namespace %s\n", name)

	DeferCleanup(func(ctx SpecContext) {
		// A spec may have deleted it already (NotFound).
		if err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
			Eventually(ctx, func(g Gomega) {
				expectGone(g, ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
			}).Should(Succeed(), "namespace %s was not deleted", name)
		}
		releaseLocalPVs(ctx, name)
	})
	// Registered after the cleanup, so it runs first (and DeferOnFailure
	// runs before any cleanup anyway).
	DeferOnFailure(func(ctx SpecContext) {
		AddReportEntry("state of namespace "+name, dumpNamespace(ctx, name))
		if lines, source := managerLogLinesNaming(name, managerLogLines); source != "" {
			AddReportEntry(fmt.Sprintf("manager log: last %d lines naming %s, of %s", managerLogLines, name, source), lines)
		}
	}, NodeTimeout(30*time.Second))

	// Pods name the "default" ServiceAccount, and admission rejects them
	// until kube-controller-manager has created it.
	Eventually(ctx, func() error {
		return k8s.Get(ctx, types.NamespacedName{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
	}).Should(Succeed(), "the default ServiceAccount of %s was not created", name)
	return name
}

// localPVLabel marks the PersistentVolumes of `make run`'s control plane
// (hack/local-cluster.sh local_pvs): hostPath directories on this machine,
// reclaim policy Retain, and no provisioner.
const localPVLabel = "gantry.dev/local-pv"

// releaseLocalPVs makes the local PersistentVolumes that claims of the
// deleted namespace ns held Available again, their directories emptied, as
// a provisioner's Delete policy would. Without it each Controller with
// persistence keeps one until the next `make run`: eight serve the whole
// run, and the suite's Slurm specs make more claims than that, so a late
// spec's slurmctld waited for a volume forever. Other clusters (kind, an
// existing one) have no such volumes, and this does nothing there.
func releaseLocalPVs(ctx context.Context, ns string) {
	GinkgoHelper()
	pvs := &corev1.PersistentVolumeList{}
	Expect(k8s.List(ctx, pvs, client.HasLabels{localPVLabel})).To(Succeed())
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != ns {
			continue
		}
		// What a pod on the real node wrote there (slurmctld's state) must
		// not reach the next claim.
		if hp := pv.Spec.HostPath; hp != nil {
			entries, err := os.ReadDir(hp.Path)
			if err != nil && !os.IsNotExist(err) {
				Expect(err).NotTo(HaveOccurred(), "emptying PersistentVolume %s", pv.Name)
			}
			for _, e := range entries {
				Expect(os.RemoveAll(filepath.Join(hp.Path, e.Name()))).To(Succeed(), "emptying PersistentVolume %s", pv.Name)
			}
		}
		base := pv.DeepCopy()
		pv.Spec.ClaimRef = nil
		Expect(k8s.Patch(ctx, pv, client.MergeFrom(base))).To(Succeed(), "releasing PersistentVolume %s", pv.Name)
		GinkgoWriter.Printf("PersistentVolume %s released (was claimed by %s/%s)\n", pv.Name, ns, base.Spec.ClaimRef.Name)
	}
}

// loadSample decodes a file of config/samples strictly: a field the Go
// type does not know fails the spec, so samples and API types cannot
// drift apart unnoticed.
func loadSample[T any](file string) *T {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", file))
	Expect(err).NotTo(HaveOccurred(), "reading sample")
	obj := new(T)
	Expect(yaml.UnmarshalStrict(data, obj)).To(Succeed(), "sample %s does not decode strictly", file)
	return obj
}

// createStrict creates obj with server-side strict field validation, so the
// CRD schema must know every field too (unknown fields are an error, not a
// warning that silently drops them).
func createStrict(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed())
}

// update re-reads obj, applies mutate and writes it, retrying conflicts
// with the operator's own writes.
func update[T client.Object](ctx context.Context, obj T, mutate func(T)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
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

// listPods lists the pods of ns with the given labels (all for nil).
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

// podState says in one line why a pod is where it is, for failure
// messages: its phase, its conditions that are not True (with reason and
// message), and each container's state, restarts and last exit.
func podState(pod *corev1.Pod) string {
	parts := []string{"phase " + string(pod.Status.Phase)}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	for _, cs := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		state := "running"
		switch st := cs.State; {
		case st.Waiting != nil:
			state = fmt.Sprintf("waiting %s (%s)", st.Waiting.Reason, st.Waiting.Message)
		case st.Terminated != nil:
			state = fmt.Sprintf("exited %d %s", st.Terminated.ExitCode, st.Terminated.Reason)
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			state += fmt.Sprintf(", last exit %d %s", t.ExitCode, t.Reason)
		}
		parts = append(parts, fmt.Sprintf("%s: %s, ready=%t, restarts %d", cs.Name, state, cs.Ready, cs.RestartCount))
	}
	return strings.Join(parts, "; ")
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

// dumpNamespace describes what a failed spec left behind: usually enough to
// tell a scheduling problem from an operator problem without a live cluster.
func dumpNamespace(ctx context.Context, ns string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- state of namespace %s\n", ns)
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(ns)); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s node=%q deleting=%t: %s\n", p.Name, p.Spec.NodeName, p.DeletionTimestamp != nil, podState(&p))
			// Containers on the real node have logs, and their last lines
			// usually say why a pod failed; kwok's pods have none.
			if strings.HasPrefix(p.Spec.NodeName, "real-") {
				logs, _ := kubectl(ctx, "-n", ns, "logs", p.Name, "--all-containers", "--prefix", "--tail=20")
				b.WriteString(logs)
			}
		}
	} else {
		fmt.Fprintf(&b, "listing pods: %v\n", err)
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := k8s.List(ctx, pvcs, client.InNamespace(ns)); err == nil {
		for _, c := range pvcs.Items {
			fmt.Fprintf(&b, "persistentvolumeclaim %s phase=%s volume=%q\n", c.Name, c.Status.Phase, c.Spec.VolumeName)
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
	} else {
		fmt.Fprintf(&b, "listing events: %v\n", err)
	}
	return b.String()
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

// requireSimulatedKubelet skips a spec that steers pods through kwok's
// stages (hack/kwok/stages.yaml: pods that run for a set time or exit with a
// set code on an annotation, slurmd pods Ready without a slurmctld): on a
// cluster with real nodes, such as kind, a real kubelet runs the containers
// instead. The local control plane's nodes carry kwok's annotation.
func requireSimulatedKubelet(ctx context.Context) {
	GinkgoHelper()
	nodes := &corev1.NodeList{}
	Expect(k8s.List(ctx, nodes)).To(Succeed(), "listing nodes")
	for _, n := range nodes.Items {
		if n.Annotations["kwok.x-k8s.io/node"] == "fake" {
			return
		}
	}
	Skip("needs kwok's simulated kubelet (pods steered by hack/kwok/stages.yaml annotations); " +
		"this cluster's nodes are real, so it runs only in `make test-e2e` on the local control plane")
}

// kubectlPath is the kubectl the specs run: $KUBECTL, the repo's bin/, or PATH.
func kubectlPath() string {
	GinkgoHelper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	if k, err := filepath.Abs(filepath.Join(repoRoot, "bin", "kubectl")); err == nil {
		if _, err := os.Stat(k); err == nil {
			return k
		}
	}
	k, err := exec.LookPath("kubectl")
	if err != nil {
		Fail("no kubectl: set KUBECTL, run `make tools`, or put kubectl on PATH")
	}
	return k
}

// kubectl runs kubectl against KUBECONFIG and returns its combined output.
func kubectl(ctx context.Context, args ...string) (string, error) {
	GinkgoHelper()
	return kubectlIn(ctx, "", args...)
}

// kubectlIn is kubectl with stdin (e.g. for `-f -`).
func kubectlIn(ctx context.Context, stdin string, args ...string) (string, error) {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, kubectlPath(), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// managerLogPath is the log of the manager under test: $GANTRY_MANAGER_LOG,
// else .run/manager.log of `make run`'s control plane unless
// .run/kubeconfig-path shows that the cluster under test is another one.
// "" when there is none (e.g. the manager runs in-cluster).
func managerLogPath() string {
	if p := os.Getenv("GANTRY_MANAGER_LOG"); p != "" {
		return p
	}
	run := filepath.Join(repoRoot, ".run")
	p, err := filepath.Abs(filepath.Join(run, "manager.log"))
	if err != nil {
		return ""
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	if local, err := os.ReadFile(filepath.Join(run, "kubeconfig-path")); err == nil {
		if filepath.Clean(strings.TrimSpace(string(local))) != filepath.Clean(os.Getenv("KUBECONFIG")) {
			return "" // the local control plane runs, but these specs talk to another cluster
		}
	}
	return p
}

// readManagerLog returns up to the last maxBytes of the manager log and
// where it came from (with its age), or source "" when there is no log.
func readManagerLog(maxBytes int64) (text, source string) {
	p := managerLogPath()
	if p == "" {
		return "", ""
	}
	f, err := os.Open(p)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", ""
	}
	if info.Size() > maxBytes {
		if _, err := f.Seek(info.Size()-maxBytes, io.SeekStart); err != nil {
			return "", ""
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "", ""
	}
	if info.Size() > maxBytes {
		// Drop the partial first line.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data), fmt.Sprintf("%s (written %s ago)", p, time.Since(info.ModTime()).Round(time.Second))
}

// managerLogTail returns the last n lines of the manager log and where they
// came from, or source "" when there is no manager log to read.
func managerLogTail(n int) (lines, source string) {
	text, source := readManagerLog(1 << 20)
	return testenv.TailLines(strings.TrimRight(text, "\n"), n), source
}

// managerLogLinesNaming returns the last n lines of the manager log that
// contain s (a namespace, say): under parallel specs the plain tail is
// mostly other specs' lines.
func managerLogLinesNaming(s string, n int) (lines, source string) {
	text, source := readManagerLog(16 << 20)
	if source == "" {
		return "", ""
	}
	var matching []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			matching = append(matching, line)
		}
	}
	if len(matching) == 0 {
		return "", ""
	}
	return testenv.TailLines(strings.Join(matching, "\n"), n), source
}

// addKwokNode creates a Node that kwok's simulated kubelet takes over (its
// annotation), labelled as kwok's own nodes are plus labels, with the
// hostname label the scheduler's topology rules key on, and deletes it when
// the spec (or the Ordered container's BeforeAll) ends. Its status is what
// kwok reports: the given node.Status, or kwok's defaults (1k CPUs, 1Ti).
func addKwokNode(ctx context.Context, node *corev1.Node) {
	GinkgoHelper()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations["kwok.x-k8s.io/node"] = "fake"
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels["type"] = "kwok"
	node.Labels[corev1.LabelOSStable] = "linux"
	node.Labels[corev1.LabelHostname] = node.Name
	Expect(k8s.Create(ctx, node)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, node))).To(Succeed()) })
}
