// Package rayjob is the RayJob controller: KubeRay v1.7's RayJob, which
// runs one Ray job on a RayCluster it creates (or on an existing one named
// by clusterSelector), submits it (a submitter Job, a request to the
// dashboard, a head Pod sidecar, or the user, interactively), follows it
// through the dashboard to its end, retries it on a new cluster
// (backoffLimit), suspends it for Kueue and deletes what its policies say
// once it ended.
//
// Contract:
//   - The state machine and its status fields are KubeRay's (states.go
//     draws it); the status is written once per reconcile, and only when
//     a field the state machine keys on changed.
//   - The Ray job's submission ID and the cluster's name are in the status
//     before anything is created under them, so a retried reconcile never
//     submits or creates twice.
//   - A clusterSelector's RayCluster is never created, changed or deleted.
//   - A RayJob being deleted has its Ray job stopped (best effort) before
//     its finalizer goes; what it owns goes with it.
//   - The objects it creates carry KubeRay's labels and Gantry's
//     managed-by label; one KubeRay created for the RayJob before a
//     migration is taken over, anyone else's is never.
package rayjob
