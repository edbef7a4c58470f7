// Package slurmctld reconciles Slinky Controllers: the slurmctld
// StatefulSet, its Services and the ConfigMap holding the generated
// slurm.conf.
package slurmctld
