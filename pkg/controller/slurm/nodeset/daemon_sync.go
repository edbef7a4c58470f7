package nodeset

import (
	"context"
	"errors"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// loadDaemonPlan reads the Kubernetes nodes (from the cache) and plans the
// NodeSet's pods; nil outside DaemonSet mode.
func (r *Reconciler) loadDaemonPlan(ctx context.Context, n *slinkyv1beta1.NodeSet, pods []*corev1.Pod) (*daemonPlan, error) {
	if !isDaemonSetMode(n) {
		return nil, nil
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return nil, err
	}
	plan := planDaemonPods(n, pods, nodes.Items)
	return &plan, nil
}

// syncDaemonPods converges DaemonSet mode: exited pods are deleted (failed
// ones come back after a back-off per node), pods whose node is gone or no
// longer matches are drained and then deleted, kept pods Gantry had
// cordoned are returned to service, and every node that should run a pod
// and has none gets one.
func (r *Reconciler) syncDaemonPods(ctx context.Context, n *slinkyv1beta1.NodeSet, s *scope) error {
	plan := s.daemon
	var errs []error
	errs = append(errs, forEachWorker(s.workers.ofAll(plan.finished), func(w *worker) error {
		if w.pod.Status.Phase == corev1.PodFailed {
			podFailed(r.backoff, daemonBackoffKey(n, plan.nodeOf[w.pod.Name]))
		}
		return r.deletePod(ctx, s, w, whyExited)
	}))
	errs = append(errs, r.condemnAll(ctx, s, capPods(plan.mismatched), cordonedForNodeMismatch))
	// Reported as Slinky reports them (reportPods: plan.renamed).
	errs = append(errs, r.condemnAll(ctx, s, capPods(plan.renamed), cordonedForUpdate))

	var victims []*corev1.Pod
	if isRollingUpdate(n) {
		victims = rollingUpdateVictimsOf(n, plan.kept, s.revisions.hash(), plan.rolloutTotal(), r.clock.Now())
	}
	keep := slices.DeleteFunc(slices.Clone(plan.kept), func(p *corev1.Pod) bool { return slices.Contains(victims, p) })
	errs = append(errs, forEachWorker(s.workers.ofAll(keep), func(w *worker) error {
		if isCondemned(w.pod) {
			if err := r.uncordon(ctx, s, w); err != nil {
				return err
			}
		}
		if err := r.syncClaimOwners(ctx, n, w.pod); err != nil {
			return err
		}
		return r.repairIdentity(ctx, n, w)
	}))
	errs = append(errs, r.createDaemonPods(ctx, n, s, plan.create))
	return errors.Join(errs...)
}

// capPods bounds the pods deleted in one reconcile.
func capPods(pods []*corev1.Pod) []*corev1.Pod {
	return pods[:min(len(pods), burstReplicas)]
}

// daemonBackoffKey keys the failed-pod back-off by node: DaemonSet-mode
// pod names are generated anew each time.
func daemonBackoffKey(n *slinkyv1beta1.NodeSet, node string) string {
	return n.Namespace + "/" + n.Name + "@node/" + node
}

// createDaemonPods creates one pod on each node, in slow-start batches with
// expectations, except on nodes whose last pod failed too recently.
func (r *Reconciler) createDaemonPods(ctx context.Context, n *slinkyv1beta1.NodeSet, s *scope, nodes []*corev1.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	controller, err := r.getController(ctx, s)
	if err != nil {
		return err
	}
	in := PodInputs{Controller: controller, RevisionHash: s.revisions.hash(), Images: r.Images, Ssh: s.ssh.hashes}
	var toCreate []*corev1.Pod
	var waiting []string
	for _, node := range nodes[:min(len(nodes), burstReplicas)] {
		if wait := backoffWait(r.backoff, daemonBackoffKey(n, node.Name)); wait > 0 {
			waiting = append(waiting, node.Name)
			s.Requeue.After(wait)
			continue
		}
		toCreate = append(toCreate, BuildDaemonPod(n, node, in))
	}
	if len(waiting) > 0 {
		s.Events.Add(ReasonBackOff, "Waiting to recreate failed Pods on Kubernetes nodes %s (back-off)",
			strings.Join(waiting, ", "))
	}
	// A pod another operator made that is adopted instead counts as
	// created here, for the node it serves.
	created, err := r.expectations.CreateBatch(s.key, expectationGroup, len(toCreate), func(i int) error {
		if _, err := r.createPod(ctx, n, toCreate[i]); err != nil {
			return err
		}
		s.noteCreatedOn(toCreate[i])
		return nil
	})
	if err != nil {
		r.Recorder.Warning(n, "FailedCreate", "Created %d of %d Pods: %v", created, len(toCreate), err)
	}
	return err
}

// syncDaemonRollout replaces kept pods of older revisions: unhealthy ones
// at once, healthy ones within maxUnavailable of the nodes that should run
// a pod (a node still waiting for its pod counts as unavailable), each
// drained before it is deleted; the next reconcile creates the new pod on
// the node that was freed.
func (r *Reconciler) syncDaemonRollout(ctx context.Context, n *slinkyv1beta1.NodeSet, s *scope) error {
	plan := s.daemon
	if plan == nil || !isRollingUpdate(n) || n.DeletionTimestamp != nil {
		return nil
	}
	_, old := splitByRevision(plan.kept, s.revisions.hash())
	unhealthy, _ := splitUnhealthy(old)
	victims := rollingUpdateVictimsOf(n, plan.kept, s.revisions.hash(), plan.rolloutTotal(), r.clock.Now())
	return r.condemnAll(ctx, s, append(unhealthy, victims...), cordonedForUpdate)
}
