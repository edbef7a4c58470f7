package nodeset

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

func daemonNodeSet(mutate func(*corev1.PodSpec)) *slinkyv1beta1.NodeSet {
	n := &slinkyv1beta1.NodeSet{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: "ns", UID: "uid-cpu"},
		Spec: slinkyv1beta1.NodeSetSpec{
			ControllerRef: slinkyv1beta1.ObjectReference{Name: "slurm"},
			ScalingMode:   slinkyv1beta1.ScalingModeDaemonset,
		},
	}
	if mutate != nil {
		mutate(&n.Spec.Template.Spec.PodSpec)
	}
	return n
}

type nodeWrapper struct{ corev1.Node }

func makeNode(name string) *nodeWrapper {
	return &nodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}}
}

func (w *nodeWrapper) label(k, v string) *nodeWrapper { w.Labels[k] = v; return w }
func (w *nodeWrapper) annotate(k, v string) *nodeWrapper {
	w.Annotations[k] = v
	return w
}
func (w *nodeWrapper) taint(key string, effect corev1.TaintEffect) *nodeWrapper {
	w.Spec.Taints = append(w.Spec.Taints, corev1.Taint{Key: key, Value: "x", Effect: effect})
	return w
}

// outage taints the node as Kubernetes' node lifecycle controller does when
// its kubelet stops reporting: key is node.kubernetes.io/not-ready or
// node.kubernetes.io/unreachable, with no value, NoSchedule and NoExecute.
func (w *nodeWrapper) outage(key string) *nodeWrapper {
	w.Spec.Taints = append(w.Spec.Taints,
		corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute})
	return w
}
func (w *nodeWrapper) cordon() *nodeWrapper { w.Spec.Unschedulable = true; return w }
func (w *nodeWrapper) obj() *corev1.Node    { return w.DeepCopy() }

func TestNodeFit(t *testing.T) {
	gpuSelector := func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"gpu": "true"} }
	tests := []struct {
		name  string
		spec  func(*corev1.PodSpec)
		node  *corev1.Node
		fit   nodeFit
		fails string
	}{
		{name: "no selector: every node", node: makeNode("a").obj(), fit: nodeFit{true, true}},
		{name: "node selector matches", spec: gpuSelector, node: makeNode("a").label("gpu", "true").obj(), fit: nodeFit{true, true}},
		{name: "node selector does not match", spec: gpuSelector, node: makeNode("a").label("gpu", "false").obj(), fit: nodeFit{}},
		{name: "node selector, unlabelled node", spec: gpuSelector, node: makeNode("a").obj(), fit: nodeFit{}},
		{
			name: "required node affinity",
			spec: func(s *corev1.PodSpec) {
				s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"},
					}}}},
				}}}
			},
			node: makeNode("a").label("zone", "c").obj(),
			fit:  nodeFit{},
		},
		{name: "NoSchedule taint, not tolerated: existing pod stays", node: makeNode("a").taint("dedicated", corev1.TaintEffectNoSchedule).obj(),
			fit: nodeFit{shouldRun: false, shouldContinue: true}},
		{name: "NoExecute taint, not tolerated: pod must go", node: makeNode("a").taint("dedicated", corev1.TaintEffectNoExecute).obj(),
			fit: nodeFit{}},
		{name: "PreferNoSchedule taint is ignored", node: makeNode("a").taint("dedicated", corev1.TaintEffectPreferNoSchedule).obj(),
			fit: nodeFit{true, true}},
		{
			name: "tolerated taint",
			spec: func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			},
			node: makeNode("a").taint("dedicated", corev1.TaintEffectNoExecute).obj(),
			fit:  nodeFit{true, true},
		},
		{name: "a cordoned node still fits (its pod is drained instead)", node: makeNode("a").cordon().obj(), fit: nodeFit{true, true}},
		// A kubelet outage must not drain and delete the node's slurmd: the
		// pods tolerate the outage taints' NoExecute, as DaemonSet pods do,
		// but not their NoSchedule, so no pod is made for a node not Ready.
		{name: "node not ready: existing pod stays, no new one", node: makeNode("a").outage(corev1.TaintNodeNotReady).obj(),
			fit: nodeFit{shouldRun: false, shouldContinue: true}},
		{name: "node unreachable: existing pod stays, no new one", node: makeNode("a").outage(corev1.TaintNodeUnreachable).obj(),
			fit: nodeFit{shouldRun: false, shouldContinue: true}},
		{name: "not-ready NoExecute alone is tolerated", fit: nodeFit{true, true}, node: func() *corev1.Node {
			node := makeNode("a").obj()
			node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}}
			return node
		}()},
		{name: "Slinky's worker taint is tolerated", fit: nodeFit{true, true}, node: func() *corev1.Node {
			node := makeNode("a").obj()
			node.Spec.Taints = []corev1.Taint{{Key: slinkyv1beta1.NodeSetPrefix + "worker", Effect: corev1.TaintEffectNoExecute}}
			return node
		}()},
		{name: "a user's NoExecute taint during an outage still evicts", fit: nodeFit{},
			node: makeNode("a").outage(corev1.TaintNodeNotReady).taint("dedicated", corev1.TaintEffectNoExecute).obj()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nodeFitOf(schedulingPod(daemonNodeSet(tt.spec)), tt.node)
			if got != tt.fit {
				t.Errorf("nodeFitOf = %+v, want %+v", got, tt.fit)
			}
		})
	}
}

func TestDaemonPodHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	tests := []struct{ node, override, want string }{
		{"kn-1", "", "kn-1"},
		{"kn-1.example.org", "", "kn-1"},
		{"kn-1.example.org", "gpu-7", "gpu-7"},
		{long, "", strings.Repeat("a", 62)},
	}
	for _, tt := range tests {
		if got := DaemonPodHostname(tt.node, tt.override); got != tt.want {
			t.Errorf("DaemonPodHostname(%q, %q) = %q, want %q", tt.node, tt.override, got, tt.want)
		}
	}
}

func TestBuildDaemonPod(t *testing.T) {
	n := daemonNodeSet(func(s *corev1.PodSpec) {
		s.Hostname = "ignored-"
		s.NodeSelector = map[string]string{"gpu": "true"}
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}},
			}}},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}},
		}}
	})
	n.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}}}
	node := makeNode("kn-1.example.org").obj()
	pod := BuildDaemonPod(n, node, PodInputs{RevisionHash: "abc"})

	if pod.GenerateName != "cpu-" || !regexp.MustCompile(`^cpu-[a-z0-9]{5}$`).MatchString(pod.Name) {
		t.Errorf("name %q generateName %q, want cpu-<5 characters> from generateName cpu-", pod.Name, pod.GenerateName)
	}
	if other := BuildDaemonPod(n, node, PodInputs{}); other.Name == pod.Name {
		t.Errorf("two pods for the same node got the same name %q", pod.Name)
	}
	if pod.Spec.Hostname != "kn-1" || SlurmNodeName(pod) != "kn-1" {
		t.Errorf("hostname %q, Slurm node %q, want kn-1", pod.Spec.Hostname, SlurmNodeName(pod))
	}
	if pod.Spec.NodeName != "" {
		t.Errorf("nodeName %q set: the scheduler must place the pod", pod.Spec.NodeName)
	}
	if got := targetNode(pod); got != "kn-1.example.org" {
		t.Errorf("targetNode = %q, want the node", got)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 {
		t.Errorf("required node affinity %+v, want only the node-name term", terms)
	}
	if len(pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Error("the template's preferred node affinity was dropped")
	}
	if pod.Spec.Affinity.PodAntiAffinity == nil {
		t.Error("the one-slurmd-per-node anti-affinity was dropped")
	}
	if n.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields != nil {
		t.Error("building the pod changed the NodeSet's template")
	}
	wantLabels := map[string]string{
		slinkyv1beta1.LabelNodeSetScalingMode:  "DaemonSet",
		slinkyv1beta1.LabelNodeSetPodName:      pod.Name,
		slinkyv1beta1.LabelNodeSetPodHostname:  "kn-1",
		slinkyv1beta1.LabelNodeSetRevisionHash: "abc",
	}
	for k, v := range wantLabels {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if _, ok := pod.Labels[slinkyv1beta1.LabelNodeSetPodIndex]; ok {
		t.Error("a DaemonSet-mode pod has no ordinal")
	}
	if !identityMatches(n, newWorker(pod)) {
		t.Error("a fresh pod's identity does not match")
	}
	if claims := podClaims(n, pod); len(claims) != 1 || claims[0].Name != "scratch-cpu-kn-1" {
		t.Errorf("claims %v, want scratch-cpu-kn-1 (named by node, as Slinky names them)", claims)
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "scratch-cpu-kn-1"
	}) {
		t.Error("the pod does not mount its claim")
	}

	override := makeNode("kn-2").annotate(slinkyv1beta1.AnnotationNodeHostnameOverride, "big-gpu-2").obj()
	if got := BuildDaemonPod(n, override, PodInputs{}).Spec.Hostname; got != "big-gpu-2" {
		t.Errorf("hostname %q, want the node's hostname-override", got)
	}
}

// daemonPod is a DaemonSet-mode pod of cpu on node, created at minute.
func daemonPod(name, node string, minute int) *podWrapper {
	n := daemonNodeSet(nil)
	p := BuildDaemonPod(n, makeNode(node).obj(), PodInputs{RevisionHash: "new"})
	p.Name = name
	setIdentity(n, p, SlurmNodeName(p))
	p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	return &podWrapper{*p}
}

func TestPlanDaemonPods(t *testing.T) {
	n := daemonNodeSet(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"slurm": "yes"} })
	matching := func(name string) corev1.Node { return *makeNode(name).label("slurm", "yes").obj() }
	names := func(pods []*corev1.Pod) []string {
		out := []string{}
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	nodeList := func(nodes []*corev1.Node) []string {
		out := make([]string, 0, len(nodes))
		for _, node := range nodes {
			out = append(out, node.Name)
		}
		return out
	}

	t.Run("one pod for each matching node", func(t *testing.T) {
		nodes := []corev1.Node{matching("a"), matching("b"), *makeNode("c").obj(), matching("d")}
		plan := planDaemonPods(n, []*corev1.Pod{&daemonPod("cpu-aaaaa", "a", 0).Pod}, nodes)
		if plan.desired != 3 {
			t.Errorf("desired = %d, want 3", plan.desired)
		}
		if got := nodeList(plan.create); !slices.Equal(got, []string{"b", "d"}) {
			t.Errorf("create on %v, want [b d]", got)
		}
		if got := names(plan.kept); !slices.Equal(got, []string{"cpu-aaaaa"}) {
			t.Errorf("kept %v", got)
		}
	})

	t.Run("pods on nodes that are gone or no longer match are drained away", func(t *testing.T) {
		nodes := []corev1.Node{matching("a"), *makeNode("b").obj(), *makeNode("c").taint("evict", corev1.TaintEffectNoExecute).obj()}
		pods := []*corev1.Pod{
			&daemonPod("cpu-aaaaa", "a", 0).Pod,
			&daemonPod("cpu-bbbbb", "b", 0).Pod,
			&daemonPod("cpu-ccccc", "c", 0).Pod,
			&daemonPod("cpu-ggggg", "gone", 0).Pod,
		}
		plan := planDaemonPods(n, pods, nodes)
		if got := names(plan.mismatched); !slices.Equal(got, []string{"cpu-bbbbb", "cpu-ccccc", "cpu-ggggg"}) {
			t.Errorf("mismatched %v, want [cpu-bbbbb cpu-ccccc cpu-ggggg]", got)
		}
		if len(plan.create) != 0 || plan.desired != 1 {
			t.Errorf("create %v desired %d", nodeList(plan.create), plan.desired)
		}
	})

	t.Run("a NoSchedule taint keeps the pod there but creates none", func(t *testing.T) {
		tainted := *makeNode("a").label("slurm", "yes").taint("maint", corev1.TaintEffectNoSchedule).obj()
		plan := planDaemonPods(n, []*corev1.Pod{&daemonPod("cpu-aaaaa", "a", 0).Pod}, []corev1.Node{tainted, *makeNode("b").label("slurm", "yes").taint("maint", corev1.TaintEffectNoSchedule).obj()})
		if got := names(plan.kept); !slices.Equal(got, []string{"cpu-aaaaa"}) || len(plan.create) != 0 || plan.desired != 0 {
			t.Errorf("kept %v create %v desired %d", got, nodeList(plan.create), plan.desired)
		}
	})

	t.Run("a node whose kubelet stops reporting keeps its pod", func(t *testing.T) {
		nodes := []corev1.Node{
			*makeNode("a").label("slurm", "yes").outage(corev1.TaintNodeNotReady).obj(),
			*makeNode("b").label("slurm", "yes").outage(corev1.TaintNodeUnreachable).obj(),
			*makeNode("c").label("slurm", "yes").outage(corev1.TaintNodeNotReady).obj(),
		}
		pods := []*corev1.Pod{&daemonPod("cpu-aaaaa", "a", 0).Pod, &daemonPod("cpu-bbbbb", "b", 0).Pod}
		plan := planDaemonPods(n, pods, nodes)
		if got := names(plan.kept); !slices.Equal(got, []string{"cpu-aaaaa", "cpu-bbbbb"}) || len(plan.mismatched) != 0 {
			t.Errorf("kept %v mismatched %v, want both kept", got, names(plan.mismatched))
		}
		if len(plan.create) != 0 || plan.desired != 0 || plan.rolloutTotal() != 2 {
			t.Errorf("create %v desired %d rolloutTotal %d: want no pod for a node not Ready, and the kept pods budgeted",
				nodeList(plan.create), plan.desired, plan.rolloutTotal())
		}
	})

	t.Run("one pod per node: the oldest stays", func(t *testing.T) {
		pods := []*corev1.Pod{&daemonPod("cpu-young", "a", 5).Pod, &daemonPod("cpu-old00", "a", 1).Pod}
		plan := planDaemonPods(n, pods, []corev1.Node{matching("a")})
		if !slices.Equal(names(plan.kept), []string{"cpu-old00"}) || !slices.Equal(names(plan.mismatched), []string{"cpu-young"}) {
			t.Errorf("kept %v mismatched %v", names(plan.kept), names(plan.mismatched))
		}
	})

	t.Run("a pod being deleted holds its node until it is gone", func(t *testing.T) {
		going := daemonPod("cpu-aaaaa", "a", 0)
		going.DeletionTimestamp = ptrTime(t0)
		plan := planDaemonPods(n, []*corev1.Pod{&going.Pod}, []corev1.Node{matching("a")})
		if len(plan.create) != 0 || len(plan.kept) != 0 || len(plan.mismatched) != 0 {
			t.Errorf("create %v kept %v mismatched %v", nodeList(plan.create), names(plan.kept), names(plan.mismatched))
		}
	})

	t.Run("exited pods are deleted; a new hostname replaces the pod", func(t *testing.T) {
		renamedNode := *makeNode("b").label("slurm", "yes").annotate(slinkyv1beta1.AnnotationNodeHostnameOverride, "gpu-b").obj()
		pods := []*corev1.Pod{&daemonPod("cpu-aaaaa", "a", 0).phase(corev1.PodFailed).Pod, &daemonPod("cpu-bbbbb", "b", 0).Pod}
		plan := planDaemonPods(n, pods, []corev1.Node{matching("a"), renamedNode})
		if !slices.Equal(names(plan.finished), []string{"cpu-aaaaa"}) || !slices.Equal(names(plan.renamed), []string{"cpu-bbbbb"}) {
			t.Errorf("finished %v renamed %v", names(plan.finished), names(plan.renamed))
		}
		if len(plan.create) != 0 {
			t.Errorf("create %v while the old pods are still there", nodeList(plan.create))
		}
	})

	t.Run("pods made in StatefulSet mode are drained away", func(t *testing.T) {
		stateful := makePod("cpu-0").Pod
		stateful.Labels = map[string]string{slinkyv1beta1.LabelNodeSetScalingMode: "StatefulSet"}
		stateful.Spec.NodeName = "a"
		plan := planDaemonPods(n, []*corev1.Pod{&stateful}, []corev1.Node{matching("a")})
		if !slices.Equal(names(plan.mismatched), []string{"cpu-0"}) || !slices.Equal(nodeList(plan.create), []string{"a"}) {
			t.Errorf("mismatched %v create %v", names(plan.mismatched), nodeList(plan.create))
		}
	})
}

func ptrTime(t time.Time) *metav1.Time { mt := metav1.NewTime(t); return &mt }

func TestNodeHandlerFilters(t *testing.T) {
	base := makeNode("a").label("slurm", "yes").obj()
	relabelled := base.DeepCopy()
	relabelled.Labels["slurm"] = "no"
	tainted := base.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	heartbeat := base.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	overridden := base.DeepCopy()
	overridden.Annotations[slinkyv1beta1.AnnotationNodeHostnameOverride] = "x"

	if !schedulingChanged(base, relabelled) || !schedulingChanged(base, tainted) {
		t.Error("label or taint changes must wake DaemonSet-mode NodeSets")
	}
	if schedulingChanged(base, heartbeat) || nodeChangedForPods(base, heartbeat) {
		t.Error("a status-only update must wake nothing")
	}
	if !nodeChangedForPods(base, overridden) {
		t.Error("a hostname-override change must wake the NodeSets with pods on the node")
	}
}
