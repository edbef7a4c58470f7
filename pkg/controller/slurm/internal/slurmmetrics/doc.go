// Package slurmmetrics holds the Slurm workload's metrics. Slinky's
// slurm-operator exports none of its own; these are Gantry's, served on the
// manager's one metrics endpoint.
package slurmmetrics
