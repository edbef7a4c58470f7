package testutil

import slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"

// Ssh sets the NodeSet's spec.ssh.
func (w *NodeSetWrapper) Ssh(ssh slinkyv1beta1.NodeSetSsh) *NodeSetWrapper {
	w.Spec.Ssh = ssh
	return w
}

// PruneNodeNotFound sets pruneSlurmNodeRecords to NodeNotFound.
func (w *NodeSetWrapper) PruneNodeNotFound() *NodeSetWrapper {
	w.Spec.PruneSlurmNodeRecords = slinkyv1beta1.NodeSetPruneNodeRecordTypeNodeNotFound
	return w
}
