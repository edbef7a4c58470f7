// Package sshd renders what sshd and sssd read in the Slurm pods that run
// them, the same way for every kind that does: LoginSets (the login pods)
// and NodeSets with spec.ssh (the slurmd pods). Slinky's images start sshd
// and sssd when /etc/ssh/sshd_config and /etc/sssd/sssd.conf are mounted;
// this package names those files, their volumes and mounts, and the pod
// annotations carrying their hashes (so a change rolls the pods), and
// renders sshd_config from a kind's defaults and the user's
// extraSshdConfig. What differs between the kinds (their defaults, the
// ConfigMap's name, login's authorized_keys and host keys) stays with them.
package sshd
