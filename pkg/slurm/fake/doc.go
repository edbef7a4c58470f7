// Package fake is an in-memory slurm.Client for tests of code that talks to
// slurmrestd (the NodeSet reconciler). Updates take effect at once, the way a
// real idle node drains at once; errors can be injected per operation.
package fake
