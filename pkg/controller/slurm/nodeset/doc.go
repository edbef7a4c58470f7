// Package nodeset reconciles Slinky NodeSets: the slurmd worker pods of a
// Slurm cluster, kept in step with what Slurm knows about their nodes.
//
// A pod is only deleted once its Slurm node is drained and idle, so scale-in
// and rolling updates never kill a job; cordoning a Kubernetes Node drains
// the Slurm nodes of the pods on it. Slurm is read once per reconcile (one
// node list, one job list) and every step consults that snapshot.
//
// A reconcile runs on the framework's skeleton (reconciler.go): Finalize
// (drop upstream's reservation finalizer) → Load (Slurm's view, the ssh
// keys, the revisions, the claimed pods, the DaemonSet-mode plan) → the
// steps, only once the cache shows this manager's own creates and deletes
// (framework expectations) → the rollout and history → Status (one status
// write, then the events of what the pods went through) → the soonest
// requeue.
//
// Where things are:
//   - deletion.go: the worker record (a claimed pod and the Slurm node
//     name it registers as, computed once per reconcile when the pods are
//     claimed), the cordon/drain/condemn vocabulary, and the one decision
//     every deleting path acts on: may this pod be deleted now without
//     ending a Slurm job (slurmView.work, mayRunJobs, mayDelete)?
//   - condemn.go: the actions on that decision: condemn (drain, re-read,
//     delete or wait), delete, cordon, uncordon.
//   - slurmview.go: the reconcile's picture of Slurm, keyed by Slurm node
//     name, and its writes (drain, undrain) mirrored into it.
//   - scale.go, daemon.go, daemon_sync.go, victims.go: the replica count,
//     scale-in victims and rolling updates, in StatefulSet and DaemonSet
//     scaling modes.
//   - cordon.go, slurmpodstate.go, topology.go, features.go, selfheal.go,
//     prune.go: the steps that carry state between Kubernetes and Slurm.
//   - claim.go, pods.go, podutil.go, revisions.go, ssh.go, objects.go,
//     tolerations.go, backoff.go: the pods, their revisions and the objects
//     shared by a Controller's NodeSets.
//   - events.go: event reasons and the report of what a reconcile did to
//     pods; status.go: the status; setup.go: watches and indexes.
package nodeset
