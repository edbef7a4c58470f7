// Package metrics registers Gantry's workload metrics on controller-runtime's
// registry (served on the manager's one metrics endpoint) and removes an
// object's series when the object is deleted.
//
// Contract: Register is idempotent: registering a collector that is already
// registered returns the registered one instead of failing, so a workload
// set up twice (tests, restarts of a controller inside one process) shares
// one set of series. Per-object metrics carry "namespace" and "name" as their
// first labels (the upstream operators' label names) so Forget can drop every series of a
// deleted object with one partial match.
package metrics
