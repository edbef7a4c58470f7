// Package token reconciles Slinky Tokens: a Slurm JWT for one user, kept in
// a Secret and issued again before it expires, for clients that talk to
// slurmrestd (job submission through the REST API) without holding the
// cluster's signing key.
package token
