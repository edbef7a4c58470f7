package nodeset

import (
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	schedulinghelper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// DaemonSet scaling mode: one slurmd pod per Kubernetes node that the
// NodeSet's template selects, as Slinky runs it. The pods are named like a
// DaemonSet's (<nodeset>-<5 random characters>, with generateName
// <nodeset>-), are bound to their node by a required node affinity on the
// node's name (so the scheduler still places them and priority applies),
// and are called by the node's name in Slurm.

// isDaemonSetMode reports a NodeSet in DaemonSet scaling mode.
func isDaemonSetMode(n *slinkyv1beta1.NodeSet) bool {
	return scalingMode(n) == slinkyv1beta1.ScalingModeDaemonset
}

// nodeFit says whether a NodeSet wants a pod on a node: shouldRun when the
// template's node selector, required node affinity and tolerations admit
// the node; shouldContinue when a pod already there may stay (it tolerates
// every NoExecute taint, even if a NoSchedule one keeps new pods off).
// A cordoned node still fits: its pod stays and is drained in Slurm, as
// the cordon asks, and a new pod waits for the node to be uncordoned.
type nodeFit struct {
	shouldRun, shouldContinue bool
}

// schedulingPod is the NodeSet's pod as the scheduler would judge it, for
// nodeFitOf: its template with the operator's defaults, and no node.
func schedulingPod(n *slinkyv1beta1.NodeSet) *corev1.Pod {
	tmpl := podTemplate(n, PodInputs{})
	return &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
}

// nodeFitOf judges node for the pod built by schedulingPod.
func nodeFitOf(pod *corev1.Pod, node *corev1.Node) nodeFit {
	// A selector that does not parse matches nothing, as for the scheduler.
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		return nodeFit{}
	}
	untolerated := func(effects ...corev1.TaintEffect) bool {
		_, found := schedulinghelper.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations,
			func(t *corev1.Taint) bool { return slices.Contains(effects, t.Effect) }, false)
		return found
	}
	if untolerated(corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute) {
		return nodeFit{shouldContinue: !untolerated(corev1.TaintEffectNoExecute)}
	}
	return nodeFit{shouldRun: true, shouldContinue: true}
}

// DaemonPodHostname is the hostname, hence the Slurm node name, of the
// DaemonSet-mode pod on the node named nodeName: the node's
// hostname-override annotation verbatim when set, else the node's name up
// to its first dot, cut to the 63 characters a hostname may have.
func DaemonPodHostname(nodeName, override string) string {
	if override != "" {
		return override
	}
	short, _, _ := strings.Cut(nodeName, ".")
	return podHostname(short)
}

func daemonPodHostnameOf(node *corev1.Node) string {
	return DaemonPodHostname(node.Name, node.Annotations[slinkyv1beta1.AnnotationNodeHostnameOverride])
}

// daemonPodNameSuffixLength is what the API server appends to a generateName.
const daemonPodNameSuffixLength = 5

// BuildDaemonPod builds the NodeSet's pod for node. The name is chosen
// here, the way the API server would complete generateName, so that the
// pod's labels can name it from the start; generateName is set too, as it
// identifies DaemonSet-mode pods of a NodeSet.
func BuildDaemonPod(n *slinkyv1beta1.NodeSet, node *corev1.Node, in PodInputs) *corev1.Pod {
	tmpl := podTemplate(n, in)
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: tmpl.ObjectMeta,
		Spec:       tmpl.Spec,
	}
	pod.GenerateName = n.Name + "-"
	pod.Name = pod.GenerateName + rand.String(daemonPodNameSuffixLength)
	pod.Namespace = n.Namespace
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK)}
	pod.Spec.Hostname = daemonPodHostnameOf(node)
	// The scheduler must place the pod so priority and affinity apply; the
	// node affinity leaves it one choice.
	pod.Spec.NodeName = ""
	pod.Spec.Affinity = withNodeNameAffinity(pod.Spec.Affinity, node.Name)
	pod.Labels[slinkyv1beta1.LabelNodeSetRevisionHash] = in.RevisionHash
	pod.Labels[slinkyv1beta1.LabelNodeSetScalingMode] = string(slinkyv1beta1.ScalingModeDaemonset)
	setIdentity(n, pod, SlurmNodeName(pod))
	setClaimVolumes(n, pod)
	return pod
}

// withNodeNameAffinity returns a copy of affinity whose required node
// affinity admits only the node named nodeName, as Kubernetes binds
// DaemonSet pods: the template's required terms are replaced (they chose
// the node already), its preferences and pod (anti-)affinity are kept.
func withNodeNameAffinity(affinity *corev1.Affinity, nodeName string) *corev1.Affinity {
	out := affinity.DeepCopy()
	if out == nil {
		out = &corev1.Affinity{}
	}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName},
		}}}},
	}
	return out
}

// targetNode is the node a pod runs on or, before it is scheduled, the one
// its node-name affinity binds it to; "" when neither says.
func targetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil ||
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key == metav1.ObjectNameField && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
				return req.Values[0]
			}
		}
	}
	return ""
}

// daemonPlan is what DaemonSet mode should do with the NodeSet's pods
// given the Kubernetes nodes; a pure function of its inputs.
type daemonPlan struct {
	// desired counts the nodes that should run a pod (status.desired).
	desired int
	// create are the nodes that should run a pod and have no live one.
	create []*corev1.Node
	// finished are exited pods: nothing runs in them, delete at once.
	finished []*corev1.Pod
	// mismatched are pods whose node is gone or no longer admits them,
	// extra pods on a node, and pods of the StatefulSet mode: each is
	// drained before it is deleted.
	mismatched []*corev1.Pod
	// renamed are pods whose node now wants another hostname (its
	// hostname-override annotation changed): replaced, drained first.
	renamed []*corev1.Pod
	// kept are the live pods that stay, one per node.
	kept []*corev1.Pod
	// nodeOf maps a pod name to the node it is bound to.
	nodeOf map[string]string
	// serves maps each node that runs, or should run, a pod of the
	// NodeSet to the Slurm node name that pod registers as: a record of
	// any other name will not be registered onto again.
	serves map[string]string
}

// planDaemonPods decides, node by node, which pods to create and which to
// remove. Pods already being deleted are left alone, but still occupy
// their node: a new pod comes once the old one is gone, as with a DaemonSet.
func planDaemonPods(n *slinkyv1beta1.NodeSet, pods []*corev1.Pod, nodes []corev1.Node) daemonPlan {
	plan := daemonPlan{nodeOf: map[string]string{}, serves: map[string]string{}}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if isTerminating(p) && isTerminal(p) {
			// Done and going: it no longer holds its node.
			continue
		}
		node := targetNode(p)
		plan.nodeOf[p.Name] = node
		switch {
		case isTerminating(p):
			byNode[node] = append(byNode[node], p)
		case !isDaemonPod(p) || node == "":
			// Made in StatefulSet mode, or bound to no node.
			plan.mismatched = append(plan.mismatched, p)
		default:
			byNode[node] = append(byNode[node], p)
		}
	}
	sched := schedulingPod(n)
	seen := map[string]bool{}
	for i := range nodes {
		node := &nodes[i]
		seen[node.Name] = true
		fit := nodeFitOf(sched, node)
		if fit.shouldRun {
			plan.desired++
		}
		if fit.shouldRun || fit.shouldContinue {
			plan.serves[node.Name] = daemonPodHostnameOf(node)
			if n.Spec.Template.Spec.HostNetwork {
				// On the host network slurmd registers the node's own name.
				plan.serves[node.Name] = node.Name
			}
		}
		onNode := byNode[node.Name]
		if len(onNode) == 0 {
			if fit.shouldRun {
				plan.create = append(plan.create, node)
			}
			continue
		}
		if !fit.shouldContinue {
			plan.mismatched = append(plan.mismatched, livePods(onNode)...)
			continue
		}
		var running []*corev1.Pod
		for _, p := range livePods(onNode) {
			switch {
			case isTerminal(p):
				plan.finished = append(plan.finished, p)
			case p.Labels[slinkyv1beta1.LabelNodeSetPodHostname] != daemonPodHostnameOf(node):
				plan.renamed = append(plan.renamed, p)
			default:
				running = append(running, p)
			}
		}
		if len(running) == 0 {
			continue
		}
		// One pod per node: the oldest stays.
		slices.SortStableFunc(running, func(a, b *corev1.Pod) int {
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return compareStrings(a.Name, b.Name)
		})
		plan.kept = append(plan.kept, running[0])
		plan.mismatched = append(plan.mismatched, running[1:]...)
	}
	for name, onNode := range byNode {
		if !seen[name] {
			// The Kubernetes node is gone.
			plan.mismatched = append(plan.mismatched, livePods(onNode)...)
		}
	}
	slices.SortFunc(plan.mismatched, func(a, b *corev1.Pod) int { return compareStrings(a.Name, b.Name) })
	return plan
}

// rolloutTotal is the number of pods a rolling update budgets against: the
// nodes that should run one, or the pods kept, if more (a node that keeps
// its pod under a NoSchedule taint is no longer desired but still served).
func (p daemonPlan) rolloutTotal() int {
	return max(p.desired, len(p.kept))
}
