package nodeset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/slurmmetrics"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/podcond"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// ClientSource finds the slurmrestd client of a Controller when a reconcile
// asks (restapi.ClientResolver in the manager). An empty restApi with no
// error means no RestApi serves the Controller; a restApi with an error
// means Slurm is configured but not usable now.
type ClientSource interface {
	ClientFor(ctx context.Context, controller types.NamespacedName) (c slurm.Client, restApi string, err error)
}

// slurmView is one reconcile's picture of Slurm: the node list and job
// deadlines are read once and every step consults them, instead of one GET
// per pod per step. Writes go to slurmrestd and are mirrored into the view
// so later steps of the same reconcile see them. It is keyed by Slurm node
// name: each pod's is computed once, in its worker (deletion.go). Safe for
// concurrent use, since steps run in slow-start batches.
type slurmView struct {
	client slurm.Client
	// pending marks a Controller that has a RestApi whose client is not
	// known yet, or had one that is gone; client is nil and err says why.
	pending bool
	// restApiGone marks the second case.
	restApiGone bool
	// err is why Slurm could not be read this reconcile.
	err error

	mu        sync.Mutex
	nodes     map[string]slurm.Node
	deadlines map[string]time.Time
	// held are the nodes in the node list of a job that holds them
	// (running, suspended, completing, ...), whatever the node's state.
	held map[string]bool
	// required are the nodes a pending job asks for by name (sbatch -w).
	required map[string]bool
	// feature and ours tell a node that could be a pod's slurmd under
	// another name: the NodeSet's feature on a node no pod accounts for.
	feature string
	ours    map[string]bool
	// unknown maps pods kept because their Slurm node is not in Slurm's
	// node list to that node name.
	unknown map[string]string
}

// loadSlurmView reads the nodes and jobs of the Controller's cluster. A nil
// client yields a view that behaves as upstream does without a RestApi:
// every node counts as drained and no Slurm state is written.
func loadSlurmView(ctx context.Context, c slurm.Client, now time.Time) *slurmView {
	v := &slurmView{client: c, nodes: map[string]slurm.Node{}, deadlines: map[string]time.Time{}, held: map[string]bool{}, required: map[string]bool{}}
	if c == nil {
		return v
	}
	nodes, err := c.ListNodes(ctx)
	if err != nil {
		v.err = fmt.Errorf("listing Slurm nodes: %w", err)
		return v
	}
	for _, n := range nodes {
		v.nodes[n.Name] = n
	}
	jobs, err := c.ListJobs(ctx)
	if err != nil {
		v.err = fmt.Errorf("listing Slurm jobs: %w", err)
		return v
	}
	v.deadlines = nodeDeadlines(jobs)
	for i := range jobs {
		j := &jobs[i]
		if j.HoldsNodes() {
			names, _ := j.NodeNames()
			for _, name := range names {
				v.held[name] = true
			}
		}
		if j.IsPending() {
			names, _ := j.RequiredNodeNames()
			for _, name := range names {
				v.required[name] = true
			}
		}
	}
	return v
}

// farDeadline is the deadline of a node held by a job with no known end,
// counted from its start (Slinky adds the largest Duration to the start of
// a job without a time limit), or noStartDeadline for a job Slurm gives
// no start: far, and the same at every reconcile, so the pod-deadline
// annotation written from it does not change.
const farDeadline = 100 * 365 * 24 * time.Hour

var noStartDeadline = time.Date(9999, time.December, 31, 0, 0, 0, 0, time.UTC)

// nodeDeadlines maps each node to the latest time limit of the jobs
// holding it: the time by which the node is expected to be idle. A
// suspended or stopped job's clock is not running, so its nodes have no
// known end.
func nodeDeadlines(jobs []slurm.Job) map[string]time.Time {
	out := map[string]time.Time{}
	for i := range jobs {
		j := &jobs[i]
		if !j.HoldsNodes() {
			continue
		}
		deadline, bounded := j.Deadline()
		if !j.IsRunning() || j.HasState(slurm.JobStateStopped) {
			bounded = false
		}
		if !bounded {
			// No limit: the node may stay busy forever; a far deadline
			// keeps it last in line for scale-in.
			deadline = noStartDeadline
			if start, ok := j.StartTime.Time(); ok {
				deadline = start.Add(farDeadline)
			}
		}
		names, err := j.NodeNames()
		if err != nil {
			continue
		}
		for _, name := range names {
			if deadline.After(out[name]) {
				out[name] = deadline
			}
		}
	}
	return out
}

// unknownSlurmView is the view of a Controller that has a RestApi whose
// client is not known: configured, never reachable, so nothing that may
// run jobs is deleted and no Slurm state is written.
func unknownSlurmView(err error) *slurmView {
	return &slurmView{pending: true, err: err, nodes: map[string]slurm.Node{}, deadlines: map[string]time.Time{},
		held: map[string]bool{}, required: map[string]bool{}}
}

// configured reports whether the Controller has a RestApi.
func (v *slurmView) configured() bool { return v.client != nil || v.pending }

// reachable reports whether Slurm state is known this reconcile.
func (v *slurmView) reachable() bool { return v.client != nil && v.err == nil }

func (v *slurmView) node(name string) (slurm.Node, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n, ok := v.nodes[name]
	return n, ok
}

func (v *slurmView) deadline(name string) time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.deadlines[name]
}

// forget drops a node deleted from Slurm.
func (v *slurmView) forget(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.nodes, name)
}

func (v *slurmView) setNode(n slurm.Node) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.nodes[n.Name] = n
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

// knowPods tells the view the NodeSet's workers, so that it can tell a
// node that could be one of them under another name.
func (v *slurmView) knowPods(n *slinkyv1beta1.NodeSet, ws []*worker) {
	ours := make(map[string]bool, len(ws))
	for _, w := range ws {
		ours[w.slurmNode] = true
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

// markUnknown records a worker kept because Slurm does not list its node.
func (v *slurmView) markUnknown(w *worker) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.unknown == nil {
		v.unknown = map[string]string{}
	}
	v.unknown[w.pod.Name] = w.slurmNode
}

// unknownNodes describes the pods kept because Slurm does not list their
// node, sorted, e.g. "pod slinky-0 (node slinky-0)"; empty when none.
func (v *slurmView) unknownNodes() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]string, 0, len(v.unknown))
	for pod, node := range v.unknown {
		out = append(out, fmt.Sprintf("pod %s (node %s)", pod, node))
	}
	slices.Sort(out)
	return out
}

// drain puts the node name in DRAIN with reason. A node already draining
// keeps its reason, so repeated reconciles send nothing.
func (v *slurmView) drain(ctx context.Context, name, reason string) error {
	if !v.reachable() {
		return nil
	}
	n, ok := v.node(name)
	if !ok || n.IsDrain() {
		return nil
	}
	reason = reasonPrefix + reason
	if err := v.client.UpdateNode(ctx, name, slurm.DrainUpdate(reason)); err != nil {
		if slurm.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("draining Slurm node %s: %w", name, err)
	}
	n.State = append(withoutState(n.State, slurm.NodeStateUndrain), slurm.NodeStateDrain)
	n.Reason = reason
	v.setNode(n)
	return nil
}

// undrain returns the worker's node to service if Gantry took it out. A
// drain of Gantry's is lifted; a node slurmd's preStop took out of service
// (DRAIN and DOWN with PreStopReason, or Slinky's preStop, which only marks
// it DOWN, before a migration) is returned once a pod of that name is Ready
// again, i.e. its slurmd is back: not before, or slurmctld could send a
// job to a node whose slurmd has not started. Without this the node would
// stay out of service for good. A drain or DOWN with someone else's reason
// is left alone.
func (v *slurmView) undrain(ctx context.Context, w *worker) error {
	if !v.reachable() {
		return nil
	}
	name, pod := w.slurmNode, w.pod
	n, ok := v.node(name)
	if !ok || !strings.HasPrefix(n.Reason, reasonPrefix) {
		return nil
	}
	update, verb := slurm.UndrainUpdate(), "undraining"
	switch {
	case !n.IsDown() && !n.IsDrain():
		return nil
	case (n.IsDown() || n.Reason == PreStopReason) && !podcond.IsReady(pod):
		return nil
	case n.IsDown():
		update, verb = slurm.ResumeUpdate(), "resuming"
	}
	if err := v.client.UpdateNode(ctx, name, update); err != nil {
		if slurm.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s Slurm node %s: %w", verb, name, err)
	}
	n.State = withoutState(n.State, slurm.NodeStateDrain)
	if n.IsDown() {
		n.State = append(withoutState(n.State, slurm.NodeStateDown), slurm.NodeStateIdle)
	}
	n.Reason = ""
	v.setNode(n)
	return nil
}

// refresh re-reads the node name after a drain, to learn whether it
// finished its work: the listed state predates the drain, and a job may
// have started in between.
func (v *slurmView) refresh(ctx context.Context, name string) error {
	if !v.reachable() {
		return nil
	}
	n, err := v.client.GetNode(ctx, name)
	if err != nil {
		if slurm.IsNotFound(err) {
			v.forget(name)
			return nil
		}
		return fmt.Errorf("reading Slurm node %s: %w", name, err)
	}
	v.setNode(*n)
	return nil
}

// confirmGone re-reads the node name and reports whether Slurm still does
// not list it; a node listed again is put back in the view.
func (v *slurmView) confirmGone(ctx context.Context, name string) (bool, error) {
	if err := v.refresh(ctx, name); err != nil {
		return false, err
	}
	_, listed := v.node(name)
	return !listed, nil
}

func withoutState(states []slurm.NodeState, s slurm.NodeState) []slurm.NodeState {
	out := make([]slurm.NodeState, 0, len(states))
	for _, x := range states {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// slurmCounts are the Slurm states of the NodeSet's nodes, for the status.
type slurmCounts struct {
	idle, allocated, down, drain int32
}

func (v *slurmView) counts(ws []*worker) slurmCounts {
	var c slurmCounts
	for _, w := range ws {
		n, ok := v.node(w.slurmNode)
		if !ok {
			continue
		}
		switch {
		case n.IsAllocated() || n.IsMixed():
			c.allocated++
		case n.IsDown():
			c.down++
		case n.IsIdle():
			c.idle++
		}
		if n.IsDrain() {
			c.drain++
		}
	}
	return c
}

// podStates counts the workers whose Slurm node drains with a job still on
// it, is drained, or runs a job; workers whose node Slurm does not list
// count in none.
func (v *slurmView) podStates(ws []*worker) slurmmetrics.PodCounts {
	var c slurmmetrics.PodCounts
	for _, w := range ws {
		n, ok := v.node(w.slurmNode)
		if !ok {
			continue
		}
		switch {
		case n.IsDrained():
			c.Drained++
		case n.IsDrain():
			c.Draining++
		}
		if n.IsBusy() {
			c.Busy++
		}
	}
	return c
}
