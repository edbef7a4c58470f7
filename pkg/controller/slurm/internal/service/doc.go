// Package service builds the Services of the Slurm daemons: a client
// Service customised by the CR's spec.service, and the headless Service
// that governs a daemon's StatefulSet.
package service
