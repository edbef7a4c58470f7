// Package jax is the ML policy for JAX: one JAX process per pod, with the
// variables jax.distributed.initialize() needs.
package jax
