// Package dashboard is Gantry's client of Ray's dashboard HTTP API: the
// Jobs API (submit, info, list, logs, stop, delete) that RayJob uses and
// the Serve API (applications' and deployments' statuses, deploying a
// serveConfigV2) that RayService uses, with the paths, headers and JSON
// KubeRay's dashboard client sends, a per-request timeout (KubeRay's 2 s),
// and retries for the requests that may be repeated safely.
//
// Package standin beside it is a stand-in dashboard for tests; the client's
// tests run against it.
package dashboard
