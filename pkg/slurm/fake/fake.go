package fake

import (
	"context"
	"slices"
	"sync"

	"github.com/gantry-dev/gantry/pkg/slurm"
)

// Op names a Client method, for error injection and call counting.
type Op string

const (
	OpPing       Op = "Ping"
	OpListNodes  Op = "ListNodes"
	OpGetNode    Op = "GetNode"
	OpUpdateNode Op = "UpdateNode"
	OpDeleteNode Op = "DeleteNode"
	OpListJobs   Op = "ListJobs"
)

// NodeUpdateCall records one UpdateNode call.
type NodeUpdateCall struct {
	Name   string
	Update slurm.NodeUpdate
}

// Client implements slurm.Client in memory. The zero value is not usable;
// call New.
type Client struct {
	mu      sync.Mutex
	nodes   map[string]slurm.Node
	jobs    []slurm.Job
	errs    map[Op]error
	calls   map[Op]int
	updates []NodeUpdateCall
	deleted []string
}

var _ slurm.Client = (*Client)(nil)

// New returns a fake holding nodes.
func New(nodes ...slurm.Node) *Client {
	c := &Client{nodes: map[string]slurm.Node{}, errs: map[Op]error{}, calls: map[Op]int{}}
	for _, n := range nodes {
		c.nodes[n.Name] = cloneNode(n)
	}
	return c
}

// SetNode adds or replaces a node, e.g. to make it busy or down.
func (c *Client) SetNode(n slurm.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[n.Name] = cloneNode(n)
}

// RemoveNode removes a node, as slurmctld does when a dynamic node's slurmd
// goes away.
func (c *Client) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
}

// SetJobs replaces the job list.
func (c *Client) SetJobs(jobs ...slurm.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobs = slices.Clone(jobs)
}

// SetError makes every later call of op fail with err; nil clears it.
func (c *Client) SetError(op Op, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		delete(c.errs, op)
		return
	}
	c.errs[op] = err
}

// Node returns a copy of the named node.
func (c *Client) Node(name string) (slurm.Node, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[name]
	return cloneNode(n), ok
}

// Calls counts calls of op, failed ones included; tests use it to prove a
// reconcile reads the node list once.
func (c *Client) Calls(op Op) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[op]
}

// Updates returns the UpdateNode calls that succeeded, in order.
func (c *Client) Updates() []NodeUpdateCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.updates)
}

// begin counts the call and returns the injected error or the context's.
// Callers hold c.mu.
func (c *Client) begin(ctx context.Context, op Op) error {
	c.calls[op]++
	if err := c.errs[op]; err != nil {
		return err
	}
	return ctx.Err()
}

// Ping implements slurm.Client.
func (c *Client) Ping(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.begin(ctx, OpPing)
}

// ListNodes implements slurm.Client; nodes come sorted by name.
func (c *Client) ListNodes(ctx context.Context) ([]slurm.Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(ctx, OpListNodes); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(c.nodes))
	for name := range c.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]slurm.Node, 0, len(names))
	for _, name := range names {
		out = append(out, cloneNode(c.nodes[name]))
	}
	return out, nil
}

// GetNode implements slurm.Client.
func (c *Client) GetNode(ctx context.Context, name string) (*slurm.Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(ctx, OpGetNode); err != nil {
		return nil, err
	}
	n, ok := c.nodes[name]
	if !ok {
		return nil, slurm.NewNotFoundError(name)
	}
	n = cloneNode(n)
	return &n, nil
}

// UpdateNode implements slurm.Client with slurmctld's rules for the states
// the operator sends: DRAIN adds the flag, UNDRAIN removes it, RESUME also
// returns a DOWN node to IDLE; clearing a drain or down clears the reason.
// Other states are refused as slurmctld refuses unknown ones.
func (c *Client) UpdateNode(ctx context.Context, name string, upd slurm.NodeUpdate) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(ctx, OpUpdateNode); err != nil {
		return err
	}
	n, ok := c.nodes[name]
	if !ok {
		return slurm.NewNotFoundError(name)
	}
	n = cloneNode(n)
	for _, s := range upd.State {
		switch s {
		case slurm.NodeStateDrain:
			n.State = withState(n.State, slurm.NodeStateDrain)
		case slurm.NodeStateUndrain:
			n.State = withoutState(n.State, slurm.NodeStateDrain)
			n.Reason = ""
		case slurm.NodeStateResume:
			n.State = withoutState(n.State, slurm.NodeStateDrain)
			if slices.Contains(n.State, slurm.NodeStateDown) {
				n.State = withState(withoutState(n.State, slurm.NodeStateDown), slurm.NodeStateIdle)
			}
			n.Reason = ""
		default:
			return &slurm.APIError{Errors: []slurm.ErrorEntry{{
				Description: "Failure to update node " + name,
				ErrorNumber: 2180,
				Error:       "Invalid node state transition",
			}}}
		}
	}
	if upd.Reason != nil {
		n.Reason = *upd.Reason
	}
	if upd.Features != nil {
		n.Features = slices.Clone(*upd.Features)
	}
	if upd.FeaturesAct != nil {
		n.ActiveFeatures = slices.Clone(*upd.FeaturesAct)
	}
	if upd.Comment != nil {
		n.Comment = *upd.Comment
	}
	if upd.TopologyStr != nil {
		n.Topology = *upd.TopologyStr
	}
	c.nodes[name] = n
	c.updates = append(c.updates, NodeUpdateCall{Name: name, Update: cloneUpdate(upd)})
	return nil
}

// DeleteNode implements slurm.Client with slurmctld's rule: a node that
// runs a job (busy, or named by a running job) is not deleted.
func (c *Client) DeleteNode(ctx context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(ctx, OpDeleteNode); err != nil {
		return err
	}
	n, ok := c.nodes[name]
	if !ok {
		return slurm.NewNotFoundError(name)
	}
	if n.IsBusy() || c.runsJob(name) {
		return &slurm.APIError{Errors: []slurm.ErrorEntry{{
			// A stand-in for slurmctld's refusal; callers must not
			// depend on its number or text.
			Description: "Failure to delete node " + name,
			ErrorNumber: 1,
			Error:       "node " + name + " runs a job",
		}}}
	}
	delete(c.nodes, name)
	c.deleted = append(c.deleted, name)
	return nil
}

// Deleted returns the nodes DeleteNode deleted, in order.
func (c *Client) Deleted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.deleted)
}

// runsJob reports a running job on the node. Callers hold c.mu.
func (c *Client) runsJob(name string) bool {
	for i := range c.jobs {
		if !c.jobs[i].IsRunning() {
			continue
		}
		if names, err := c.jobs[i].NodeNames(); err == nil && slices.Contains(names, name) {
			return true
		}
	}
	return false
}

// ListJobs implements slurm.Client.
func (c *Client) ListJobs(ctx context.Context) ([]slurm.Job, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(ctx, OpListJobs); err != nil {
		return nil, err
	}
	out := make([]slurm.Job, len(c.jobs))
	for i, j := range c.jobs {
		j.State = slices.Clone(j.State)
		out[i] = j
	}
	return out, nil
}

func withState(states []slurm.NodeState, s slurm.NodeState) []slurm.NodeState {
	if slices.Contains(states, s) {
		return states
	}
	return append(states, s)
}

func withoutState(states []slurm.NodeState, s slurm.NodeState) []slurm.NodeState {
	return slices.DeleteFunc(states, func(x slurm.NodeState) bool { return x == s })
}

// cloneNode copies the slices so callers cannot reach the fake's state.
func cloneNode(n slurm.Node) slurm.Node {
	n.State = slices.Clone(n.State)
	n.Partitions = slices.Clone(n.Partitions)
	n.Features = slices.Clone(n.Features)
	n.ActiveFeatures = slices.Clone(n.ActiveFeatures)
	return n
}

func cloneUpdate(u slurm.NodeUpdate) slurm.NodeUpdate {
	u.State = slices.Clone(u.State)
	if u.Reason != nil {
		r := *u.Reason
		u.Reason = &r
	}
	if u.Comment != nil {
		c := *u.Comment
		u.Comment = &c
	}
	for _, f := range []**[]string{&u.Features, &u.FeaturesAct} {
		if *f != nil {
			c := slices.Clone(**f)
			*f = &c
		}
	}
	if u.TopologyStr != nil {
		t := *u.TopologyStr
		u.TopologyStr = &t
	}
	return u
}
