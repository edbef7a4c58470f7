// Package podspec builds the pieces of pod specs every Slurm daemon's pod
// uses: the log-streaming sidecar, the memory-backed volumes, projections
// of single Secret and ConfigMap keys, probes and the user's pod template.
package podspec
