package nodeset

import (
	"context"
	"errors"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/slowstart"
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
	errs = append(errs, forEachPod(plan.finished, func(pod *corev1.Pod) error {
		if pod.Status.Phase == corev1.PodFailed {
			r.backoff.failed(daemonBackoffKey(n, plan.nodeOf[pod.Name]), r.clock.Now())
		}
		return r.deletePod(ctx, n, s, pod, "")
	}))
	errs = append(errs, r.condemnAll(ctx, n, s, capPods(plan.mismatched), cordonedForNodeMismatch))
	s.tally.markRenamed(plan.renamed)
	errs = append(errs, r.condemnAll(ctx, n, s, capPods(plan.renamed), cordonedForUpdate))

	var victims []*corev1.Pod
	if isRollingUpdate(n) {
		victims = rollingUpdateVictimsOf(n, plan.kept, s.revisions.hash(), plan.rolloutTotal(), r.clock.Now())
	}
	keep := slices.DeleteFunc(slices.Clone(plan.kept), func(p *corev1.Pod) bool { return slices.Contains(victims, p) })
	errs = append(errs, forEachPod(keep, func(pod *corev1.Pod) error {
		if isCondemned(pod) {
			if err := r.uncordon(ctx, s, pod); err != nil {
				return err
			}
		}
		if identityMatches(n, pod) {
			return nil
		}
		return r.patchPod(ctx, pod, func(p *corev1.Pod) { setIdentity(n, p) })
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
		if wait := r.backoff.wait(daemonBackoffKey(n, node.Name), r.clock.Now()); wait > 0 {
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
	r.expectations.ExpectCreations(s.key, expectationGroup, len(toCreate))
	created, err := slowstart.SlowStartBatch(len(toCreate), 1, func(i int) error {
		if _, err := r.createPod(ctx, n, toCreate[i]); err != nil {
			return err
		}
		s.tally.addNode(toCreate[i])
		return nil
	})
	if skipped := len(toCreate) - created; skipped > 0 {
		r.expectations.CancelCreations(s.key, expectationGroup, skipped)
	}
	s.tally.created += created
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
	return r.condemnAll(ctx, n, s, append(unhealthy, victims...), cordonedForUpdate)
}
