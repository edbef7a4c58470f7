package slinky

import (
	"github.com/gantry-dev/gantry/pkg/framework/builder"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// Values of app.kubernetes.io/name and app.kubernetes.io/component.
const (
	AppSlurmctld        = "slurmctld"
	ComponentController = "controller"

	AppSlurmrestd    = "slurmrestd"
	ComponentRestApi = "restapi"

	AppSlurmd       = "slurmd"
	ComponentWorker = "worker"

	AppSlurmdbd         = "slurmdbd"
	ComponentAccounting = "accounting"
)

// LabelCluster names the Controller a NodeSet's pods belong to.
const LabelCluster = slinkyv1beta1.SlinkyPrefix + "cluster"

// ControllerSelectorLabels select the slurmctld pods of c. They never change
// for the life of the object because StatefulSet selectors are immutable.
func ControllerSelectorLabels(c *slinkyv1beta1.Controller) map[string]string {
	return builder.SelectorLabels(AppSlurmctld, c.Name, "")
}

// ControllerLabels are carried by every object made for c.
func ControllerLabels(c *slinkyv1beta1.Controller) map[string]string {
	return ownedLabels(AppSlurmctld, c.Name, ComponentController)
}

// RestApiSelectorLabels select the slurmrestd pods of r.
func RestApiSelectorLabels(r *slinkyv1beta1.RestApi) map[string]string {
	return builder.SelectorLabels(AppSlurmrestd, r.Name, "")
}

// RestApiLabels are carried by every object made for r.
func RestApiLabels(r *slinkyv1beta1.RestApi) map[string]string {
	return ownedLabels(AppSlurmrestd, r.Name, ComponentRestApi)
}

// NodeSetSelectorLabels select the slurmd pods of n.
func NodeSetSelectorLabels(n *slinkyv1beta1.NodeSet) map[string]string {
	return builder.SelectorLabels(AppSlurmd, n.Name, "")
}

// NodeSetLabels are carried by every object made for n.
func NodeSetLabels(n *slinkyv1beta1.NodeSet) map[string]string {
	l := ownedLabels(AppSlurmd, n.Name, ComponentWorker)
	l[LabelCluster] = n.Spec.ControllerRef.Name
	return l
}

// ownedLabels include managed-by because the manager's cache only sees Pods
// and Services carrying it: without it Gantry could not find its own pods.
func ownedLabels(app, instance, component string) map[string]string {
	l := builder.SelectorLabels(app, instance, component)
	l[builder.LabelManagedBy] = builder.ManagedByGantry
	return l
}

// AccountingSelectorLabels select the slurmdbd pod of a.
func AccountingSelectorLabels(a *slinkyv1beta1.Accounting) map[string]string {
	return builder.SelectorLabels(AppSlurmdbd, a.Name, "")
}

// AccountingLabels are carried by every object made for a.
func AccountingLabels(a *slinkyv1beta1.Accounting) map[string]string {
	return ownedLabels(AppSlurmdbd, a.Name, ComponentAccounting)
}
