package slurm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// NodeState is one entry of a node's "state" array. slurmrestd v0.0.44
// reports the base state (IDLE, ALLOCATED, MIXED, DOWN, ...) and every flag
// (DRAIN, COMPLETING, CLOUD, ...) as separate entries, e.g.
// ["IDLE","DRAIN"].
type NodeState string

// Base states: exactly one is present.
const (
	NodeStateAllocated NodeState = "ALLOCATED"
	NodeStateDown      NodeState = "DOWN"
	NodeStateError     NodeState = "ERROR"
	NodeStateFuture    NodeState = "FUTURE"
	NodeStateIdle      NodeState = "IDLE"
	NodeStateMixed     NodeState = "MIXED"
	NodeStateUnknown   NodeState = "UNKNOWN"
)

// Flag states: any combination may be present.
const (
	NodeStateCloud         NodeState = "CLOUD"
	NodeStateCompleting    NodeState = "COMPLETING"
	NodeStateDrain         NodeState = "DRAIN"
	NodeStateDynamicNorm   NodeState = "DYNAMIC_NORM"
	NodeStateFail          NodeState = "FAIL"
	NodeStateInvalid       NodeState = "INVALID"
	NodeStateInvalidReg    NodeState = "INVALID_REG"
	NodeStateMaintenance   NodeState = "MAINTENANCE"
	NodeStateNotResponding NodeState = "NOT_RESPONDING"
	NodeStatePoweredDown   NodeState = "POWERED_DOWN"
	NodeStateUndrain       NodeState = "UNDRAIN"
)

// States accepted in a node update. RESUME clears DRAIN (and DOWN), UNDRAIN
// clears only DRAIN.
const (
	NodeStateResume NodeState = "RESUME"
)

// Node is a Slurm node as slurmrestd v0.0.44 reports it, reduced to what the
// operator reads.
type Node struct {
	Name     string      `json:"name"`
	Hostname string      `json:"hostname,omitempty"`
	Address  string      `json:"address,omitempty"`
	State    []NodeState `json:"state"`
	// Reason explains DRAIN/DOWN/FAIL; ReasonSetByUser tells whose it is.
	Reason          string `json:"reason,omitempty"`
	ReasonSetByUser string `json:"reason_set_by_user,omitempty"`
	ReasonChangedAt NoVal  `json:"reason_changed_at,omitzero"`
	Comment         string `json:"comment,omitempty"`

	CPUs          int32 `json:"cpus"`
	AllocCPUs     int32 `json:"alloc_cpus"`
	AllocIdleCPUs int32 `json:"alloc_idle_cpus"`
	// RealMemory and AllocMemory are MiB.
	RealMemory  int64 `json:"real_memory"`
	AllocMemory int64 `json:"alloc_memory"`

	Partitions []string `json:"partitions,omitempty"`
	// Features are the node's available features, ActiveFeatures the
	// active ones (the same unless a node_features plugin changes them).
	Features       []string `json:"features,omitempty"`
	ActiveFeatures []string `json:"active_features,omitempty"`
	Topology       string   `json:"topology,omitempty"`
}

// HasState reports whether s is among the node's states.
func (n *Node) HasState(s NodeState) bool { return slices.Contains(n.State, s) }

// IsIdle reports the IDLE base state.
func (n *Node) IsIdle() bool { return n.HasState(NodeStateIdle) }

// IsAllocated reports the ALLOCATED base state (all CPUs in use).
func (n *Node) IsAllocated() bool { return n.HasState(NodeStateAllocated) }

// IsMixed reports the MIXED base state (some CPUs in use).
func (n *Node) IsMixed() bool { return n.HasState(NodeStateMixed) }

// IsDown reports the DOWN base state.
func (n *Node) IsDown() bool { return n.HasState(NodeStateDown) }

// IsDrain reports that the node takes no new work: DRAIN is set and no
// UNDRAIN is pending.
func (n *Node) IsDrain() bool {
	return n.HasState(NodeStateDrain) && !n.HasState(NodeStateUndrain)
}

// IsBusy reports that something still runs on the node: a job, or the
// prolog/epilog of one (COMPLETING).
func (n *Node) IsBusy() bool {
	return n.IsAllocated() || n.IsMixed() || n.HasState(NodeStateCompleting) || n.AllocCPUs > 0
}

// IsDrained reports that a draining node has finished its work, so the pod
// behind it can go without killing a job.
func (n *Node) IsDrained() bool { return n.IsDrain() && !n.IsBusy() }

// NodeUpdate is the body of POST /slurm/v0.0.44/node/{name}. Nil fields are
// left unchanged; a pointer to "" clears the field.
type NodeUpdate struct {
	State   []NodeState `json:"state,omitempty"`
	Reason  *string     `json:"reason,omitempty"`
	Comment *string     `json:"comment,omitempty"`
	// TopologyStr is the node's place in a dynamic topology
	// (update_node_msg.topology_str), read back as Node.Topology.
	TopologyStr *string `json:"topology_str,omitempty"`
	// Features and FeaturesAct replace the node's available and active
	// features (update_node_msg.features, features_act); a pointer to an
	// empty list clears them.
	Features    *[]string `json:"features,omitempty"`
	FeaturesAct *[]string `json:"features_act,omitempty"`
}

// DrainUpdate drains a node with reason; Slurm requires a reason for DRAIN.
func DrainUpdate(reason string) NodeUpdate {
	return NodeUpdate{State: []NodeState{NodeStateDrain}, Reason: &reason}
}

// UndrainUpdate clears DRAIN and leaves any other state (e.g. DOWN) alone.
func UndrainUpdate() NodeUpdate {
	return NodeUpdate{State: []NodeState{NodeStateUndrain}}
}

// ResumeUpdate returns a drained or down node to service.
func ResumeUpdate() NodeUpdate {
	return NodeUpdate{State: []NodeState{NodeStateResume}}
}

// CommentUpdate sets the node's comment, where the operator records the pod
// behind a node.
func CommentUpdate(comment string) NodeUpdate {
	return NodeUpdate{Comment: &comment}
}

// FeaturesUpdate replaces the node's available and active features.
func FeaturesUpdate(available, active []string) NodeUpdate {
	available, active = slices.Clone(available), slices.Clone(active)
	if available == nil {
		available = []string{}
	}
	if active == nil {
		active = []string{}
	}
	return NodeUpdate{Features: &available, FeaturesAct: &active}
}

// TopologyUpdate sets the node's dynamic topology, e.g. "topo-switch:s1".
func TopologyUpdate(topology string) NodeUpdate {
	return NodeUpdate{TopologyStr: &topology}
}

// JobState is one entry of a job's "job_state" array, e.g.
// ["RUNNING","CONFIGURING"].
type JobState string

// Job base states the operator cares about.
const (
	JobStatePending   JobState = "PENDING"
	JobStateRunning   JobState = "RUNNING"
	JobStateSuspended JobState = "SUSPENDED"
	JobStateCompleted JobState = "COMPLETED"
	JobStateCancelled JobState = "CANCELLED"
	JobStateFailed    JobState = "FAILED"
	JobStateTimeout   JobState = "TIMEOUT"
)

// Job state flags (slurmrestd v0.0.44 lists them beside the base state,
// e.g. ["RUNNING","CONFIGURING"]) under which a job still holds nodes.
const (
	// JobStateCompleting: the job ended; its epilog still runs on the nodes.
	JobStateCompleting JobState = "COMPLETING"
	// JobStateConfiguring: the allocated nodes are booting.
	JobStateConfiguring JobState = "CONFIGURING"
	// JobStateStopped: SIGSTOPped, holding its resources.
	JobStateStopped JobState = "STOPPED"
	// JobStateSignaling: a signal to the job's processes is pending.
	JobStateSignaling JobState = "SIGNALING"
	// JobStateResizing: the job's size is about to change.
	JobStateResizing JobState = "RESIZING"
)

// nodeHoldingJobStates are the states in which a job has processes, or the
// right to run them, on the nodes in its node list.
var nodeHoldingJobStates = []JobState{
	JobStateRunning, JobStateSuspended, JobStateCompleting, JobStateConfiguring,
	JobStateStopped, JobStateSignaling, JobStateResizing,
}

// Job is a Slurm job as slurmrestd v0.0.44 reports it, reduced to what the
// operator needs to tell when a node's jobs will end.
type Job struct {
	JobID     int64      `json:"job_id"`
	Name      string     `json:"name,omitempty"`
	State     []JobState `json:"job_state"`
	UserName  string     `json:"user_name,omitempty"`
	Partition string     `json:"partition,omitempty"`
	// Nodes is a hostlist expression ("node-[1-3,7]"); see NodeNames.
	Nodes string `json:"nodes,omitempty"`
	// RequiredNodes are the nodes the job asked for (sbatch -w), a
	// hostlist expression; a pending job waits for them.
	RequiredNodes string `json:"required_nodes,omitempty"`
	StartTime     NoVal  `json:"start_time,omitzero"`
	EndTime       NoVal  `json:"end_time,omitzero"`
	// TimeLimit is in minutes; Infinite means no limit.
	TimeLimit NoVal `json:"time_limit,omitzero"`
}

// HasState reports whether s is among the job's states.
func (j *Job) HasState(s JobState) bool { return slices.Contains(j.State, s) }

// IsRunning reports the RUNNING state.
func (j *Job) IsRunning() bool { return j.HasState(JobStateRunning) }

// HoldsNodes reports whether the job has processes, or the right to run
// them, on its nodes: running, suspended (Slurm frees a suspended job's
// CPUs, so its nodes may look IDLE, but resuming it needs them), stopped,
// booting its nodes, resizing, signalling, or still completing. Deleting
// such a node's pod ends the job.
func (j *Job) HoldsNodes() bool {
	return slices.ContainsFunc(nodeHoldingJobStates, j.HasState)
}

// IsPending reports the PENDING base state.
func (j *Job) IsPending() bool { return j.HasState(JobStatePending) }

// RequiredNodeNames expands the job's required node list.
func (j *Job) RequiredNodeNames() ([]string, error) { return ExpandHostlist(j.RequiredNodes) }

// NodeNames expands the job's hostlist expression.
func (j *Job) NodeNames() ([]string, error) { return ExpandHostlist(j.Nodes) }

// Deadline is when the job must end at the latest. bounded is false when
// the job has no time limit, so no deadline can be given.
func (j *Job) Deadline() (deadline time.Time, bounded bool) {
	if j.TimeLimit.Infinite {
		return time.Time{}, false
	}
	// For a started job slurmctld already reports start + limit as end_time.
	if end, ok := j.EndTime.Time(); ok {
		return end, true
	}
	start, ok := j.StartTime.Time()
	if !ok || !j.TimeLimit.Set {
		return time.Time{}, false
	}
	return start.Add(time.Duration(j.TimeLimit.Number) * time.Minute), true
}

// NoVal is slurmrestd's wrapper for numbers that may be unset or infinite:
// {"set":true,"infinite":false,"number":N}. Older data parsers and some
// fields send a bare number, which decodes as set.
type NoVal struct {
	Set      bool  `json:"set"`
	Infinite bool  `json:"infinite"`
	Number   int64 `json:"number"`
}

// Value returns the number and whether it is meaningful (set, finite).
func (v NoVal) Value() (int64, bool) {
	if !v.Set || v.Infinite {
		return 0, false
	}
	return v.Number, true
}

// Time reads the number as Unix seconds; zero means "not yet" to Slurm.
func (v NoVal) Time() (time.Time, bool) {
	n, ok := v.Value()
	if !ok || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// UnmarshalJSON accepts the object form, a bare number and null.
func (v *NoVal) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*v = NoVal{}
		return nil
	case len(data) > 0 && data[0] == '{':
		type plain NoVal
		var p plain
		if err := json.Unmarshal(data, &p); err != nil {
			return err
		}
		*v = NoVal(p)
		return nil
	default:
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return fmt.Errorf("slurm: number field: %w", err)
		}
		i, err := n.Int64()
		if err != nil {
			// Slurm sends some counters as floats; keep the integer part.
			f, ferr := n.Float64()
			if ferr != nil {
				return fmt.Errorf("slurm: number field %q: %w", n, err)
			}
			i = int64(f)
		}
		*v = NoVal{Set: true, Number: i}
		return nil
	}
}

// NewNoVal is a set, finite number.
func NewNoVal(n int64) NoVal { return NoVal{Set: true, Number: n} }

// InfiniteNoVal is the "no limit" value.
func InfiniteNoVal() NoVal { return NoVal{Set: true, Infinite: true} }
