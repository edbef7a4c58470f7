// Package standin is a stand-in for Ray's dashboard HTTP API, written from
// scratch for tests: health and version, the Jobs REST API (jobs run as
// `/bin/sh -c <entrypoint>` processes, PENDING → RUNNING → SUCCEEDED,
// FAILED or STOPPED, honouring runtime_env.env_vars only; or, with
// NewSimulatedJobs, simulated as kwok simulates a Pod's containers) and the Serve
// REST API reduced to bookkeeping (every application of the last config
// RUNNING, every deployment HEALTHY). The test image's `ray` stand-in serves
// it on the head, and Gantry's dashboard client is tested against it.
//
// It answers as Ray's dashboard does for the calls KubeRay's and Gantry's
// clients make (paths, JSON fields, status codes, the "already exists"
// sentence of a reused submission ID); it proves that an operator's calls
// and status handling fit, not that Ray works.
package standin

// Version is what /api/version reports, so that nobody mistakes the
// stand-in for a Ray release.
const Version = "standin"

// HealthReply is the body of every health endpoint.
const HealthReply = "success"
