package nodeset

import (
	"context"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/index"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	fwbuilder "github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/framework/refwatch"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Field indexes on Pods. The names are this package's own so they cannot
// clash with another reconciler's index of the same field.
const (
	// IndexPodOwner maps a pod to the UID of the NodeSet controlling it,
	// and a pod nobody controls to OrphanPod.
	IndexPodOwner = "slinky.nodeset.pod.owner"
	// OrphanPod is IndexPodOwner's value for a pod without a controller:
	// the NodeSets' candidates for adoption. Listing them through the
	// index costs the orphans alone; a list by the selector labels matched
	// every cached pod of the namespace, the NodeSet's own included, on
	// every reconcile. (A UID is never this.)
	OrphanPod = "orphan"
	// IndexPodNodeName maps a pod to the Kubernetes Node it runs on or, not
	// scheduled yet, is bound to by its node affinity (DaemonSet mode).
	IndexPodNodeName = "slinky.nodeset.pod.nodeName"
	// IndexNodeSetScalingMode maps a NodeSet to its scaling mode, so that a
	// Node event finds the DaemonSet-mode NodeSets without listing them all.
	IndexNodeSetScalingMode = "slinky.nodeset.scalingMode"
	// IndexNodeSetSssdSecret maps an ssh-enabled NodeSet to the Secret of
	// its ssh.sssdConfRef (same namespace).
	IndexNodeSetSssdSecret = "slinky.nodeset.sssdConfRef"
)

// RegisterIndexes adds the NodeSet's own field indexes (on Pods and
// NodeSets) behind the watches to indexer (the manager's). The slurm
// Integration registers them once, before the reconciler is set up.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, IndexPodOwner, podOwnerIndex); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, IndexPodNodeName, func(o client.Object) []string {
		if name := targetNode(o.(*corev1.Pod)); name != "" {
			return []string{name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &slinkyv1beta1.NodeSet{}, IndexNodeSetScalingMode, func(o client.Object) []string {
		return []string{string(scalingMode(o.(*slinkyv1beta1.NodeSet)))}
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &slinkyv1beta1.NodeSet{}, IndexNodeSetSssdSecret, sssdSecretIndex)
}

// SetupWithManager registers r and its watches.
//
// Watches: the NodeSet; its pods (feeding the expectations first, and
// orphans that it could adopt); the shared Service and PDB; its ssh-config
// ConfigMap; the Secret of its sssd.conf (watched by its name, core.Refs:
// a change of the data changes the resourceVersion); Kubernetes
// Nodes (see nodeHandler); Controllers (a NodeSet waits for its Controller
// before creating pods).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	cache := mgr.GetClient()
	b, err := core.WatchRefs(mgr, workload.NewController(mgr, Name, &slinkyv1beta1.NodeSet{}, r.Workers),
		core.Refs{Kind: &corev1.Secret{}, Map: secretToNodeSets,
			Holders: []refwatch.Holder{{Object: &slinkyv1beta1.NodeSet{}, Names: sssdSecretIndex}}})
	if err != nil {
		return err
	}
	return b.
		Watches(&corev1.Pod{}, r.expectations.Handler(podOwnerKey, podEvents(podUpdateBatch))).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(sharedToNodeSets)).
		Watches(&policyv1.PodDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(sharedToNodeSets)).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Node{}, nodeHandler(cache)).
		Watches(&slinkyv1beta1.Controller{}, handler.EnqueueRequestsFromMapFunc(controllerToNodeSets(cache))).
		Watches(&slinkyv1beta1.RestApi{}, handler.EnqueueRequestsFromMapFunc(restAPIToNodeSets(cache))).
		Complete(r)
}

func isNodeSetRef(ref *metav1.OwnerReference) bool {
	return ref != nil && ref.Kind == slinkyv1beta1.NodeSetKind && strings.HasPrefix(ref.APIVersion, slinkyv1beta1.GroupVersion.Group+"/")
}

func podOwnerIndex(o client.Object) []string {
	ref := metav1.GetControllerOf(o)
	switch {
	case ref == nil:
		return []string{OrphanPod}
	case isNodeSetRef(ref):
		return []string{string(ref.UID)}
	}
	return nil
}

// podOwnerKey keys a pod's expectations by its controlling NodeSet.
func podOwnerKey(o client.Object) (string, string, bool) {
	ref := metav1.GetControllerOf(o)
	if !isNodeSetRef(ref) {
		return "", "", false
	}
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}.String(), expectationGroup, true
}

// podUpdateBatch is how long a change of a pod, other than its creation or
// deletion, may wait before its NodeSet is reconciled. The status changes
// of many pods starting or stopping together (scheduled, running, ready,
// terminating) then make one reconcile instead of one each, as the
// Kubernetes Job controller batches its pod events (1 s). Creations and
// deletions, which scaling waits for, are not held.
const podUpdateBatch = time.Second

// podEvents enqueues the NodeSet of a pod (podToNodeSet): at once for a
// pod created or deleted, after batch for any other change. A NodeSet
// already waiting keeps its earlier time, so a burst of changes is one
// reconcile.
func podEvents(batch time.Duration) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], after time.Duration, objs ...client.Object) {
		seen := map[reconcile.Request]bool{}
		for _, o := range objs {
			for _, req := range podToNodeSet(ctx, o) {
				if seen[req] {
					continue
				}
				seen[req] = true
				if after > 0 {
					q.AddAfter(req, after)
				} else {
					q.Add(req)
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, ev event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, 0, ev.Object)
		},
		UpdateFunc: func(ctx context.Context, ev event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, batch, ev.ObjectOld, ev.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, ev event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, 0, ev.Object)
		},
		GenericFunc: func(ctx context.Context, ev event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, 0, ev.Object)
		},
	}
}

// podToNodeSet wakes the controlling NodeSet, or for an orphan slurmd pod
// the NodeSet its labels name, which may adopt it.
func podToNodeSet(_ context.Context, o client.Object) []reconcile.Request {
	if ref := metav1.GetControllerOf(o); ref != nil {
		if !isNodeSetRef(ref) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
	}
	l := o.GetLabels()
	if l[fwbuilder.LabelName] != slinky.AppSlurmd || l[fwbuilder.LabelInstance] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[fwbuilder.LabelInstance]}}}
}

// sharedToNodeSets wakes the NodeSets owning a shared Service or PDB, so
// that drift or deletion is corrected.
func sharedToNodeSets(_ context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for i := range o.GetOwnerReferences() {
		ref := &o.GetOwnerReferences()[i]
		if isNodeSetRef(ref) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}})
		}
	}
	return reqs
}

// nodeHandler wakes the NodeSets a Kubernetes Node event concerns, without
// waking the others:
//   - the NodeSets with pods on the Node (or bound to it), when it is
//     deleted or when its cordon, cordon reason, topology, hostname
//     override, labels or taints change (syncCordon, syncTopology and
//     DaemonSet mode read them);
//   - DaemonSet-mode NodeSets that want a pod on a new Node, on a deleted
//     one (status.desired), or whose wish changes with the labels or taints
//     of an updated one.
func nodeHandler(reader client.Reader) handler.TypedEventHandler[client.Object, reconcile.Request] {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], reqs []reconcile.Request) {
		for _, req := range reqs {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if node, ok := e.Object.(*corev1.Node); ok {
				enqueue(q, daemonNodeSetsFor(ctx, reader, nil, node))
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldNode, ok1 := e.ObjectOld.(*corev1.Node)
			newNode, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return
			}
			if nodeChangedForPods(oldNode, newNode) {
				enqueue(q, nodeSetsWithPodsOn(ctx, reader, newNode.Name))
			}
			if schedulingChanged(oldNode, newNode) {
				enqueue(q, daemonNodeSetsFor(ctx, reader, oldNode, newNode))
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			node, ok := e.Object.(*corev1.Node)
			if !ok {
				return
			}
			enqueue(q, nodeSetsWithPodsOn(ctx, reader, node.Name))
			enqueue(q, daemonNodeSetsFor(ctx, reader, nil, node))
		},
	}
}

// nodeChangedForPods reports a Node update that changes what the steps
// read about the pods on it.
func nodeChangedForPods(oldNode, newNode *corev1.Node) bool {
	for _, key := range []string{slinkyv1beta1.AnnotationNodeCordonReason, slinkyv1beta1.AnnotationNodeTopologySpec,
		slinkyv1beta1.AnnotationNodeFeaturesSpec, slinkyv1beta1.AnnotationNodeHostnameOverride} {
		if oldNode.Annotations[key] != newNode.Annotations[key] {
			return true
		}
	}
	return oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable || schedulingChanged(oldNode, newNode)
}

// schedulingChanged reports a Node update that may change whether a
// NodeSet's pods belong on it.
func schedulingChanged(oldNode, newNode *corev1.Node) bool {
	return !maps.Equal(oldNode.Labels, newNode.Labels) || !equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints)
}

// nodeSetsWithPodsOn maps a Node to the NodeSets with pods on it.
func nodeSetsWithPodsOn(ctx context.Context, reader client.Reader, node string) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.MatchingFields{IndexPodNodeName: node}); err != nil {
		log.FromContext(ctx).Error(err, "listing pods on a Node", "node", node)
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var reqs []reconcile.Request
	for i := range pods.Items {
		ref := metav1.GetControllerOf(&pods.Items[i])
		if !isNodeSetRef(ref) {
			continue
		}
		key := types.NamespacedName{Namespace: pods.Items[i].Namespace, Name: ref.Name}
		if !seen[key] {
			seen[key] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	return reqs
}

// daemonNodeSetsFor lists the DaemonSet-mode NodeSets that want a pod on
// node or, given the node before an update (oldNode), whose answer changed.
func daemonNodeSetsFor(ctx context.Context, reader client.Reader, oldNode, node *corev1.Node) []reconcile.Request {
	list := &slinkyv1beta1.NodeSetList{}
	if err := reader.List(ctx, list, client.MatchingFields{IndexNodeSetScalingMode: string(slinkyv1beta1.ScalingModeDaemonset)}); err != nil {
		log.FromContext(ctx).Error(err, "listing DaemonSet-mode NodeSets", "node", node.Name)
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		n := &list.Items[i]
		pod := schedulingPod(n)
		fit := nodeFitOf(pod, node)
		concerned := fit.shouldRun
		if oldNode != nil {
			concerned = fit != nodeFitOf(pod, oldNode)
		}
		if concerned {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(n)})
		}
	}
	return reqs
}

// controllerToNodeSets maps a Controller to its NodeSets (any namespace).
func controllerToNodeSets(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return nodeSetsOf(ctx, reader, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
	}
}

// restAPIToNodeSets maps a RestApi to the NodeSets of its Controller: a
// RestApi appearing, changing its endpoint or going away changes how (and
// whether) they reach Slurm.
func restAPIToNodeSets(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		ra, ok := o.(*slinkyv1beta1.RestApi)
		if !ok {
			return nil
		}
		return nodeSetsOf(ctx, reader, types.NamespacedName{Namespace: ra.Namespace, Name: ra.Spec.ControllerRef.Name})
	}
}

// nodeSetsOf lists the NodeSets joining the Controller.
func nodeSetsOf(ctx context.Context, reader client.Reader, controller types.NamespacedName) []reconcile.Request {
	list := &slinkyv1beta1.NodeSetList{}
	key := controller.String()
	if err := reader.List(ctx, list, client.MatchingFields{index.NodeSetController: key}); err != nil {
		log.FromContext(ctx).Error(err, "listing NodeSets of a Controller", "controller", key)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

func sssdSecretIndex(o client.Object) []string {
	n := o.(*slinkyv1beta1.NodeSet)
	if n.Spec.Ssh.Enabled && n.Spec.Ssh.SssdConfRef.Name != "" {
		return []string{n.Spec.Ssh.SssdConfRef.Name}
	}
	return nil
}

// secretToNodeSets maps a Secret to the ssh-enabled NodeSets that read
// their sssd.conf from it.
func secretToNodeSets(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &slinkyv1beta1.NodeSetList{}
		if err := reader.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{IndexNodeSetSssdSecret: o.GetName()}); err != nil {
			log.FromContext(ctx).Error(err, "listing NodeSets using a Secret", "secret", client.ObjectKeyFromObject(o))
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return reqs
	}
}
