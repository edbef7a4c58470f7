// Package mpi is the ML policy for MPI (OpenMPI): a launcher job runs
// mpirun, which reaches the node pods over SSH with a generated key pair and
// finds them through a hostfile.
//
// Objects: Secret <job>-mpi-ssh-auth (ECDSA key pair, immutable, created
// once: regenerating it would lock running pods out of each other) and
// ConfigMap <job>-mpi-hostfile ("<endpoint> slots=N" per node pod).
package mpi
