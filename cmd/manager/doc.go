// Command manager is Gantry's operator: one controller-runtime manager that
// runs the RayCluster, TrainJob and Slurm controllers selected with
// --controllers, their webhooks and metrics. `make run` starts it against an
// embedded control plane; the Helm chart runs it in a cluster.
package main
