package nodeset

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/index"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/service"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// workerLabels label the objects shared by all NodeSets of a Controller.
func workerLabels(controller string) map[string]string {
	return map[string]string{
		builder.LabelName:      slinky.AppSlurmd,
		builder.LabelComponent: slinky.ComponentWorker,
		builder.LabelManagedBy: builder.ManagedByGantry,
		slinky.LabelCluster:    controller,
	}
}

// BuildWorkerService builds the headless Service every worker pod of the
// Controller is a subdomain of, so slurmctld and peers resolve node names.
func BuildWorkerService(n *slinkyv1beta1.NodeSet, owners []metav1.OwnerReference) *corev1.Service {
	controller := n.Spec.ControllerRef.Name
	meta := metav1.ObjectMeta{
		Name:            WorkerServiceName(controller),
		Namespace:       n.Namespace,
		Labels:          workerLabels(controller),
		OwnerReferences: owners,
	}
	return service.NewHeadless(service.Params{
		Meta:     meta,
		Selector: map[string]string{builder.LabelName: slinky.AppSlurmd, slinky.LabelCluster: controller},
		PortName: slinky.AppSlurmd,
		Port:     slinky.SlurmdPort,
	})
}

// BuildWorkerPDB builds the budget that forbids evicting a worker pod
// whose Slurm node runs jobs (those pods carry the pod-protect label).
func BuildWorkerPDB(n *slinkyv1beta1.NodeSet, owners []metav1.OwnerReference) *policyv1.PodDisruptionBudget {
	controller := n.Spec.ControllerRef.Name
	meta := metav1.ObjectMeta{
		Name:            WorkerPDBName(controller),
		Namespace:       n.Namespace,
		Labels:          workerLabels(controller),
		OwnerReferences: owners,
	}
	selector := map[string]string{slinky.LabelCluster: controller, slinkyv1beta1.LabelNodeSetPodProtect: "true"}
	return builder.PodDisruptionBudget(meta, selector, nil, ptr.To(intstr.FromInt32(0)))
}

// sharedOwners makes every NodeSet of the Controller in this namespace an
// owner of the shared objects, so they go with the last NodeSet.
func (r *Reconciler) sharedOwners(ctx context.Context, n *slinkyv1beta1.NodeSet) ([]metav1.OwnerReference, error) {
	list := &slinkyv1beta1.NodeSetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(n.Namespace),
		client.MatchingFields{index.NodeSetController: index.NodeSetControllerValue(n)}); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b slinkyv1beta1.NodeSet) int { return compareStrings(a.Name, b.Name) })
	owners := make([]metav1.OwnerReference, 0, len(list.Items))
	for i := range list.Items {
		other := &list.Items[i]
		if other.DeletionTimestamp != nil {
			continue
		}
		owners = append(owners, metav1.OwnerReference{
			APIVersion:         slinkyv1beta1.GroupVersion.String(),
			Kind:               slinkyv1beta1.NodeSetKind,
			Name:               other.Name,
			UID:                other.UID,
			BlockOwnerDeletion: ptr.To(true),
		})
	}
	return owners, nil
}

func (r *Reconciler) syncWorkerService(ctx context.Context, s *scope) error {
	n := s.Object
	owners, err := r.sharedOwners(ctx, n)
	if err != nil {
		return err
	}
	return r.Sync(ctx, &s.Events, BuildWorkerService(n, owners))
}

func (r *Reconciler) syncWorkerPDB(ctx context.Context, s *scope) error {
	n := s.Object
	owners, err := r.sharedOwners(ctx, n)
	if err != nil {
		return err
	}
	return r.Sync(ctx, &s.Events, BuildWorkerPDB(n, owners))
}
