package nodeset

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/podcond"
)

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

// work classifies the pod. Whatever the kubelet reports, a node Slurm
// lists decides: slurmd registers, and takes jobs, before the pod's
// Running and Ready reach the API server.
func (v *slurmView) work(pod *corev1.Pod) podWork {
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
	name := SlurmNodeName(pod)
	if n, ok := v.node(name); ok {
		switch {
		case v.holds(name) || n.IsBusy():
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
	case v.couldBeElsewhere(name), podcond.IsReady(pod):
		// A Ready slurmd whose node is not listed registered under another
		// name, or Slurm lost the node: jobs may run where Gantry cannot
		// see them. A slurmd not Ready never registered.
		return workUnknown
	default:
		return workNone
	}
}

// mayRunJobs reports whether deleting the pod now could end a Slurm job,
// i.e. whether its delete must wait for the node to drain. A pod kept
// because Slurm does not list its node is recorded for the status.
func (v *slurmView) mayRunJobs(pod *corev1.Pod) bool {
	w := v.work(pod)
	if w == workUnknown && v.reachable() {
		v.markUnknown(pod, SlurmNodeName(pod))
	}
	return w != workNone
}

// protects reports whether the pod belongs under the worker
// PodDisruptionBudget: a job holds its node, or may where Slurm cannot
// show it.
func (v *slurmView) protects(pod *corev1.Pod) bool {
	w := v.work(pod)
	return w == workRunning || w == workUnknown
}

// holds reports whether a job holds the node.
func (v *slurmView) holds(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.held[name]
}

// isRequired reports whether a pending job asks for the node by name: its
// record must stay, or slurmctld fails the job on its next reconfigure.
func (v *slurmView) isRequired(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.required[name]
}

// knowPods tells the view the NodeSet's pods, so that it can tell a node
// that could be one of them under another name.
func (v *slurmView) knowPods(n *slinkyv1beta1.NodeSet, pods []*corev1.Pod) {
	ours := make(map[string]bool, len(pods))
	for _, p := range pods {
		ours[SlurmNodeName(p)] = true
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.feature, v.ours = slinky.SlurmNodeSetName(n), ours
}

// couldBeElsewhere reports whether a node Slurm lists might be the one a
// pod's slurmd registered under another name than name: a node named
// after the pod with a domain ("<name>.example.org"), or a node with the
// NodeSet's feature that no pod of the NodeSet accounts for.
func (v *slurmView) couldBeElsewhere(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, node := range v.nodes {
		if strings.HasPrefix(node.Name, name+".") {
			return true
		}
		if v.feature != "" && !v.ours[node.Name] && slices.Contains(node.Features, v.feature) {
			return true
		}
	}
	return false
}

// confirmGone re-reads the pod's node and reports whether Slurm still
// does not list it; a node listed again is put back in the view.
func (v *slurmView) confirmGone(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if err := v.refresh(ctx, pod); err != nil {
		return false, err
	}
	_, listed := v.node(SlurmNodeName(pod))
	return !listed, nil
}
