// Package v1beta1 holds the slinky.slurm.net/v1beta1 API: Controller
// (slurmctld), RestApi (slurmrestd) and NodeSet (slurmd workers).
//
// Group, version, kinds, JSON field names, defaults and well-known keys follow
// Slinky's slurm-operator v1.x so that manifests written for it are accepted
// unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=slinky.slurm.net
package v1beta1
