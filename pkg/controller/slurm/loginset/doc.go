// Package loginset reconciles Slinky LoginSets: Slurm login pods in a
// Deployment — sshd for users, sssd to resolve them, sackd so that Slurm's
// commands reach the Controller's slurmctld — behind one ssh Service, with
// SSH host keys generated once and kept in a Secret.
package loginset
