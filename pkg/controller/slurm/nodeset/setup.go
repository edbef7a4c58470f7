package nodeset

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
	fwbuilder "github.com/gantry-dev/gantry/pkg/framework/builder"
)

// Field indexes on Pods. The names are this package's own so they cannot
// clash with another reconciler's index of the same field.
const (
	// IndexPodOwner maps a pod to the UID of the NodeSet controlling it.
	IndexPodOwner = "slinky.nodeset.pod.owner"
	// IndexPodNodeName maps a pod to the Kubernetes Node it runs on.
	IndexPodNodeName = "slinky.nodeset.pod.nodeName"
)

// SetupWithManager registers a NodeSet reconciler built from the manager's
// client, API reader and event recorder, taking Slurm clients from clients
// (nil when no Controller will ever have a RestApi).
func SetupWithManager(mgr ctrl.Manager, clients ClientSource, concurrency int) error {
	r := NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), clients, mgr.GetEventRecorder(Name))
	return r.SetupWithManager(mgr, concurrency)
}

// SetupWithManager registers r, its watches and the indexes they use.
//
// Watches: the NodeSet; its pods (feeding the expectations first, and
// orphans that it could adopt); the shared Service and PDB; Kubernetes
// Nodes whose cordon changes (mapped to the NodeSets with pods on them);
// Controllers (a NodeSet waits for its Controller before creating pods).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	ctx := context.Background()
	if err := common.RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, IndexPodOwner, podOwnerIndex); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, IndexPodNodeName, func(o client.Object) []string {
		if name := o.(*corev1.Pod).Spec.NodeName; name != "" {
			return []string{name}
		}
		return nil
	}); err != nil {
		return err
	}
	cache := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&slinkyv1beta1.NodeSet{}).
		Watches(&corev1.Pod{}, r.expectations.Handler(podOwnerKey, handler.EnqueueRequestsFromMapFunc(podToNodeSet))).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(sharedToNodeSets)).
		Watches(&policyv1.PodDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(sharedToNodeSets)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(nodeToNodeSets(cache)), builder.WithPredicates(nodeChanged())).
		Watches(&slinkyv1beta1.Controller{}, handler.EnqueueRequestsFromMapFunc(controllerToNodeSets(cache))).
		Watches(&slinkyv1beta1.RestApi{}, handler.EnqueueRequestsFromMapFunc(restAPIToNodeSets(cache))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(concurrency, 1)}).
		Complete(r)
}

func isNodeSetRef(ref *metav1.OwnerReference) bool {
	return ref != nil && ref.Kind == slinkyv1beta1.NodeSetKind && strings.HasPrefix(ref.APIVersion, slinkyv1beta1.GroupVersion.Group+"/")
}

func podOwnerIndex(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); isNodeSetRef(ref) {
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
	if l[fwbuilder.LabelName] != common.AppSlurmd || l[fwbuilder.LabelInstance] == "" {
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

// nodeChanged passes Node updates that change what syncCordon and
// syncTopology read.
func nodeChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldNode, ok1 := e.ObjectOld.(*corev1.Node)
			newNode, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return false
			}
			return oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable ||
				oldNode.Annotations[slinkyv1beta1.AnnotationNodeCordonReason] != newNode.Annotations[slinkyv1beta1.AnnotationNodeCordonReason] ||
				oldNode.Annotations[slinkyv1beta1.AnnotationNodeTopologySpec] != newNode.Annotations[slinkyv1beta1.AnnotationNodeTopologySpec]
		},
	}
}

// nodeToNodeSets maps a Node to the NodeSets with pods on it.
func nodeToNodeSets(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		pods := &corev1.PodList{}
		if err := reader.List(ctx, pods, client.MatchingFields{IndexPodNodeName: o.GetName()}); err != nil {
			log.FromContext(ctx).Error(err, "listing pods on a Node", "node", o.GetName())
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
	if err := reader.List(ctx, list, client.MatchingFields{common.IndexNodeSetController: key}); err != nil {
		log.FromContext(ctx).Error(err, "listing NodeSets of a Controller", "controller", key)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
