package slinky

import (
	"fmt"
	"strings"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// Names of the objects made for a Controller. They take the Controller's
// name (not the object) so a NodeSet, which only holds a reference, can
// derive them too.

// ControllerStatefulSetName is the slurmctld StatefulSet, and the prefix of
// its pod names.
func ControllerStatefulSetName(controller string) string { return controller + "-controller" }

// ControllerServiceName is the Service clients (slurmd, slurmrestd, users)
// reach slurmctld through.
func ControllerServiceName(controller string) string { return controller + "-controller" }

// ControllerInternalServiceName is the headless Service that governs the
// StatefulSet and gives each slurmctld pod a stable DNS name.
func ControllerInternalServiceName(controller string) string {
	return controller + "-controller-internal"
}

// ControllerConfigMapName holds slurm.conf and cgroup.conf.
func ControllerConfigMapName(controller string) string { return controller + "-config" }

// ControllerPodName is the slurmctld pod (and host) name at ordinal.
func ControllerPodName(controller string, ordinal int) string {
	return fmt.Sprintf("%s-%d", ControllerStatefulSetName(controller), ordinal)
}

// ControllerPodFQDNShort is the pod's stable DNS name through the headless
// Service, without the cluster domain so it works under any domain.
func ControllerPodFQDNShort(controller, namespace string, ordinal int) string {
	return fmt.Sprintf("%s.%s.%s", ControllerPodName(controller, ordinal), ControllerInternalServiceName(controller), namespace)
}

// ControllerServiceFQDNShort is the client Service's DNS name without the
// cluster domain.
func ControllerServiceFQDNShort(controller, namespace string) string {
	return ControllerServiceName(controller) + "." + namespace
}

// ControllerReplicas is the number of slurmctld pods; the v1beta1 API has
// no high-availability backups, so it is always one.
func ControllerReplicas(*slinkyv1beta1.Controller) int32 { return 1 }

// RestApiName names the slurmrestd Deployment and Service.
func RestApiName(restapi string) string { return restapi + "-restapi" }

// AccountingName names the slurmdbd StatefulSet, its Service and the
// Secret holding slurmdbd.conf, as Slinky names all three. A Controller's
// AccountingStorageHost is this name.
func AccountingName(accounting string) string { return accounting + "-accounting" }

// AccountingPodName is the slurmdbd pod (and host) name: slurmdbd.conf's
// DbdHost, which slurmdbd requires to be its own host name.
func AccountingPodName(accounting string) string { return AccountingName(accounting) + "-0" }

// SlurmNodeSetName is the name of the NodeSet inside Slurm (NodeSet=,
// Feature=, partition Nodes=): the pods' hostname prefix when the template
// sets one, else the NodeSet's name.
func SlurmNodeSetName(n *slinkyv1beta1.NodeSet) string {
	if fields := strings.Fields(n.Spec.Template.Spec.Hostname); len(fields) > 0 {
		// A hostname of dashes alone names nothing: slurm.conf would get
		// "NodeSet= Feature=", which slurmctld reads as one empty pair.
		if name := strings.Trim(fields[0], "-"); name != "" {
			return name
		}
	}
	return n.Name
}

// ConfServerArgs are slurmd's and sackd's --conf-server arguments: configless
// mode fetches slurm.conf from slurmctld instead of mounting it.
func ConfServerArgs(c *slinkyv1beta1.Controller) []string {
	if c.Spec.External && c.Spec.ExternalConfig != nil {
		return []string{"--conf-server", fmt.Sprintf("%s:%d", c.Spec.ExternalConfig.Host, c.Spec.ExternalConfig.Port)}
	}
	servers := make([]string, 0, ControllerReplicas(c))
	for i := range int(ControllerReplicas(c)) {
		servers = append(servers, fmt.Sprintf("%s:%d", ControllerPodFQDNShort(c.Name, c.Namespace, i), SlurmctldPort))
	}
	return []string{"--conf-server", strings.Join(servers, ",")}
}
