// Package slurm wires the Slinky-compatible Slurm reconcilers — Controller
// (slurmctld), RestApi (slurmrestd), Accounting (slurmdbd), NodeSet (slurmd
// pods), LoginSet and Token — into the Gantry manager as the "slurm"
// workload.
package slurm
