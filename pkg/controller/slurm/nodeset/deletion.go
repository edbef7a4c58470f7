package nodeset

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/podcond"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// This file is the vocabulary every path that takes a slurmd pod out of
// service speaks (cordon, drain, condemn) and the one decision they act
// on: may the pod be deleted now without ending a Slurm job? Both are
// keyed by the pod's Slurm node name, which a reconcile computes once per
// pod, as it claims the pods (workers): every step reads it from there.
// The steps that act on the decision are in condemn.go and cordon.go.

// worker is one claimed slurmd pod and the Slurm node it registers as.
// The node's Slurm state is the view's (slurmView.node(slurmNode)): the
// view mirrors this reconcile's own writes (a drain), so a copy kept here
// would go stale.
type worker struct {
	pod *corev1.Pod
	// slurmNode is SlurmNodeName(pod), computed once per reconcile.
	slurmNode string
}

func newWorker(pod *corev1.Pod) *worker {
	return &worker{pod: pod, slurmNode: SlurmNodeName(pod)}
}

// workers are one reconcile's claimed pods as workers, in claim order and
// by pod name (unique within the NodeSet's namespace). Built once when
// the pods are loaded and only read after, so the steps may share them.
type workers struct {
	list  []*worker
	byPod map[string]*worker
}

func newWorkers(pods []*corev1.Pod) workers {
	ws := workers{list: make([]*worker, 0, len(pods)), byPod: make(map[string]*worker, len(pods))}
	for _, p := range pods {
		w := newWorker(p)
		ws.list = append(ws.list, w)
		ws.byPod[p.Name] = w
	}
	return ws
}

// of is the worker of a claimed pod. Every pod a step acts on is one of
// the claimed pods; one that is not (none in practice) gets a worker of
// its own, not kept.
func (ws workers) of(pod *corev1.Pod) *worker {
	if w, ok := ws.byPod[pod.Name]; ok && w.pod == pod {
		return w
	}
	return newWorker(pod)
}

// ofAll is of for each pod, in order.
func (ws workers) ofAll(pods []*corev1.Pod) []*worker {
	out := make([]*worker, 0, len(pods))
	for _, p := range pods {
		out = append(out, ws.of(p))
	}
	return out
}

// live are the workers whose pods are not terminating, in claim order.
func (ws workers) live() []*worker {
	out := make([]*worker, 0, len(ws.list))
	for _, w := range ws.list {
		if !isTerminating(w.pod) {
			out = append(out, w)
		}
	}
	return out
}

// AnnotationCordonedBy records why Gantry cordoned a pod, so that Gantry
// only ever lifts its own cordons: a pod-cordon set by a person stays until
// that person removes it.
const AnnotationCordonedBy = "gantry.dev/nodeset-cordoned-by"

// Values of AnnotationCordonedBy, and why a pod is condemned (drained,
// then deleted).
const (
	cordonedForNode    = "node"
	cordonedForScaleIn = "scale-in"
	cordonedForUpdate  = "update"
	// cordonedForNodeMismatch: DaemonSet mode, the pod's Kubernetes node is
	// gone or no longer matches the NodeSet.
	cordonedForNodeMismatch = "node-mismatch"
)

// Why a pod is deleted without being condemned first.
const (
	// whyUnregistered: a healthy pod whose Slurm node Slurm does not list
	// is replaced (selfheal.go).
	whyUnregistered = "unregistered"
	// whyExited: a pod that finished (Succeeded or Failed) runs no slurmd,
	// so no job: it is deleted to be made again.
	whyExited = "exited"
)

// isPodCordoned reports Slinky's pod-cordon annotation, set by Gantry or
// by a person.
func isPodCordoned(pod *corev1.Pod) bool {
	v, err := strconv.ParseBool(pod.Annotations[slinkyv1beta1.AnnotationPodCordon])
	return err == nil && v
}

// isCondemned reports a pod Gantry cordoned to delete it.
func isCondemned(pod *corev1.Pod) bool {
	v := pod.Annotations[AnnotationCordonedBy]
	return isPodCordoned(pod) && (v == cordonedForScaleIn || v == cordonedForUpdate || v == cordonedForNodeMismatch)
}

// reasonPrefix marks drain reasons Gantry set; a reason without it belongs
// to an administrator and is never overridden. It is upstream's prefix, so
// nodes drained by the Slinky operator stay recognisable after a migration.
const reasonPrefix = "slurm-operator: "

// maxReasonLength bounds reasons taken from user input (a Node annotation).
const maxReasonLength = 256

// isReasonOurs reports whether the node carries no reason or Gantry's.
func isReasonOurs(n slurm.Node) bool {
	return n.Reason == "" || strings.HasPrefix(n.Reason, reasonPrefix)
}

// isUnresponsive is slurmctld's mark for a node whose slurmd stopped
// answering; its state is left to slurmctld.
func isUnresponsive(n slurm.Node) bool {
	return n.IsDown() && strings.Contains(n.Reason, "Not responding")
}

// condemnReason is the drain reason of a pod condemned for why.
func condemnReason(pod *corev1.Pod, why string) string {
	if why == cordonedForNodeMismatch {
		return fmt.Sprintf("Pod (%s/%s) is pending termination: its Kubernetes node %s is gone or no longer matches the NodeSet",
			pod.Namespace, pod.Name, targetNode(pod))
	}
	return fmt.Sprintf("Pod (%s/%s) is pending termination for %s", pod.Namespace, pod.Name, why)
}

// nodeCordonedReason is the default drain reason of a pod on a cordoned
// Kubernetes Node; the Node's cordon-reason annotation or conditions
// (cordon.go) replace it.
func nodeCordonedReason(node *corev1.Node, pod *corev1.Pod) string {
	return fmt.Sprintf("Node (%s) was cordoned, Pod (%s/%s) must be cordoned", node.Name, pod.Namespace, pod.Name)
}

// podCordonedReason is the drain reason of a pod someone cordoned.
func podCordonedReason(pod *corev1.Pod) string {
	return fmt.Sprintf("Pod (%s/%s) was cordoned", pod.Namespace, pod.Name)
}

// sanitizeReason makes user text (a Node annotation) a single-line reason.
func sanitizeReason(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case r < 0x20 || r == 0x7f:
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if runes := []rune(s); len(runes) > maxReasonLength {
		s = strings.TrimSpace(string(runes[:maxReasonLength]))
	}
	return s
}

// podWork is what Slurm says about the work on a pod's Slurm node: the one
// answer every path that deletes a slurmd pod (scale-in, rolling update,
// DaemonSet node mismatch) and the pod protection label act on.
type podWork int

const (
	// workNone: no job runs on the node and none can start there (it is
	// drained, or slurmd never ran), or, without any RestApi, Slurm's
	// state is not consulted (upstream's rule). The pod may go.
	workNone podWork = iota
	// workPossible: nothing holds the node, but it takes jobs: it is
	// drained before its pod goes.
	workPossible
	// workRunning: a job holds the node (running, suspended, stopped,
	// completing or booting it), or the node says it is busy.
	workRunning
	// workUnknown: Gantry cannot tell: Slurm cannot be read (or its
	// RestApi is gone), or slurmd may be registered under another name.
	workUnknown
)

// work classifies the worker. Whatever the kubelet reports, a node Slurm
// lists decides: slurmd registers, and takes jobs, before the pod's
// Running and Ready reach the API server.
func (v *slurmView) work(w *worker) podWork {
	pod := w.pod
	if !v.configured() || isTerminal(pod) {
		// A finished pod runs no process, so no slurmd and no job.
		return workNone
	}
	// A pod bound to a node (or that a kubelet reports on) may have
	// started slurmd; one the scheduler has not placed cannot have.
	scheduled := pod.Spec.NodeName != "" || pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodUnknown
	if !v.reachable() {
		if scheduled {
			return workUnknown
		}
		return workNone
	}
	if n, ok := v.node(w.slurmNode); ok {
		switch {
		case v.holds(w.slurmNode) || n.IsBusy():
			return workRunning
		case n.IsDrain():
			return workNone
		default:
			return workPossible
		}
	}
	switch {
	case !scheduled:
		return workNone
	case v.couldBeElsewhere(w.slurmNode), podcond.IsReady(pod):
		// A Ready slurmd whose node is not listed registered under another
		// name, or Slurm lost the node: jobs may run where Gantry cannot
		// see them. A slurmd not Ready never registered.
		return workUnknown
	default:
		return workNone
	}
}

// mayRunJobs reports whether deleting the worker's pod now could end a
// Slurm job, i.e. whether its delete must wait for the node to drain. A
// pod kept because Slurm does not list its node is recorded for the
// status.
func (v *slurmView) mayRunJobs(w *worker) bool {
	work := v.work(w)
	if work == workUnknown && v.reachable() {
		v.markUnknown(w)
	}
	return work != workNone
}

// protects reports whether the worker's pod belongs under the worker
// PodDisruptionBudget: a job holds its node, or may where Slurm cannot
// show it.
func (v *slurmView) protects(w *worker) bool {
	work := v.work(w)
	return work == workRunning || work == workUnknown
}

// mayDelete is the decision every path that condemns a pod acts on, once
// its node was asked to drain: may the pod be deleted now? listed is the
// worker's work as the reconcile's node list showed it, before the drain.
// Work listed there (a job, or no way to tell) keeps the pod whatever a
// re-read says. Otherwise the node is read again, since the list predates
// the drain and anything an administrator or a job did since, and its
// fresh state decides.
func (v *slurmView) mayDelete(ctx context.Context, w *worker, listed podWork) (bool, error) {
	switch listed {
	case workNone, workPossible:
		if err := v.refresh(ctx, w.slurmNode); err != nil {
			return false, err
		}
		return !v.mayRunJobs(w), nil
	default:
		// Kept whatever a re-read says; mayRunJobs records why.
		v.mayRunJobs(w)
		return false, nil
	}
}
