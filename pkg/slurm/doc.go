// Package slurm is Gantry's client for slurmrestd's v0.0.44 API: the few
// calls the Slurm controllers make (ping, nodes, node updates, jobs), JWT
// signing with the cluster's HS256 key, and a registry holding one client per
// Controller.
package slurm
