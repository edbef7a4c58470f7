package slurm

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"
)

// The testdata files are answers of a real slurmrestd 26.05 (data parser
// v0.0.44), captured from the test/slurm harness.
func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDecodeRealNodeList(t *testing.T) {
	var resp nodesResponse
	if err := json.Unmarshal(readFixture(t, "nodes.json"), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Nodes) != 2 {
		t.Fatalf("got %d nodes, want 2", len(resp.Nodes))
	}
	busy, drained := resp.Nodes[0], resp.Nodes[1]
	if busy.Name != "dyn1" || !busy.IsAllocated() || busy.AllocCPUs != 1 || busy.CPUs != 1 {
		t.Errorf("dyn1 = %+v, want allocated with 1/1 CPUs", busy)
	}
	if busy.Comment != `{"namespace":"slurm","podName":"gpu-0"}` {
		t.Errorf("dyn1 comment = %q", busy.Comment)
	}
	if drained.Name != "dyn5" || !drained.IsDrained() || drained.Reason != "kubernetes node cordoned" || drained.ReasonSetByUser != "slurm" {
		t.Errorf("dyn5 = %+v, want drained by slurm with the cordon reason", drained)
	}
	if at, ok := drained.ReasonChangedAt.Time(); !ok || at.IsZero() {
		t.Errorf("dyn5 reason_changed_at = %+v, want a time", drained.ReasonChangedAt)
	}
	if !reflect.DeepEqual(drained.Partitions, []string{"debug"}) {
		t.Errorf("dyn5 partitions = %v", drained.Partitions)
	}
}

func TestDecodeRealJobList(t *testing.T) {
	var resp jobsResponse
	if err := json.Unmarshal(readFixture(t, "jobs.json"), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Jobs) != 2 {
		t.Fatalf("got %d jobs, want 2", len(resp.Jobs))
	}
	running := resp.Jobs[1]
	if running.JobID != 2 || !running.IsRunning() || running.Nodes != "dyn1" {
		t.Errorf("job 2 = %+v, want running on dyn1", running)
	}
	if running.TimeLimit != NewNoVal(7) {
		t.Errorf("time limit = %+v, want 7 minutes", running.TimeLimit)
	}
	deadline, bounded := running.Deadline()
	start, _ := running.StartTime.Time()
	if !bounded || !deadline.Equal(start.Add(7*time.Minute)) {
		t.Errorf("deadline = %v (bounded %v), want start %v + 7m", deadline, bounded, start)
	}
	if resp.Jobs[0].IsRunning() {
		t.Errorf("cancelled job 1 reported running: %v", resp.Jobs[0].State)
	}
}

func TestNodeStateHelpers(t *testing.T) {
	type want struct{ idle, allocated, down, drain, drained, busy bool }
	tests := []struct {
		name string
		node Node
		want want
	}{
		{"idle", Node{State: []NodeState{"IDLE"}}, want{idle: true}},
		{"idle drained", Node{State: []NodeState{"IDLE", "DRAIN"}}, want{idle: true, drain: true, drained: true}},
		{"allocated draining", Node{State: []NodeState{"ALLOCATED", "DRAIN"}, AllocCPUs: 4}, want{allocated: true, drain: true, busy: true}},
		{"mixed draining", Node{State: []NodeState{"MIXED", "DRAIN"}, AllocCPUs: 1}, want{drain: true, busy: true}},
		{"completing after drain", Node{State: []NodeState{"IDLE", "DRAIN", "COMPLETING"}}, want{idle: true, drain: true, busy: true}},
		{"undrain pending", Node{State: []NodeState{"IDLE", "DRAIN", "UNDRAIN"}}, want{idle: true}},
		{"down drained", Node{State: []NodeState{"DOWN", "DRAIN"}}, want{down: true, drain: true, drained: true}},
		{"alloc cpus without state", Node{State: []NodeState{"IDLE", "DRAIN"}, AllocCPUs: 2}, want{idle: true, drain: true, busy: true}},
		{"no state", Node{}, want{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := want{
				idle: tc.node.IsIdle(), allocated: tc.node.IsAllocated(), down: tc.node.IsDown(),
				drain: tc.node.IsDrain(), drained: tc.node.IsDrained(), busy: tc.node.IsBusy(),
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNoValUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    NoVal
		wantErr bool
	}{
		{`{"set":true,"infinite":false,"number":42}`, NoVal{Set: true, Number: 42}, false},
		{`{"set":false,"infinite":false,"number":0}`, NoVal{}, false},
		{`{"set":true,"infinite":true,"number":0}`, NoVal{Set: true, Infinite: true}, false},
		{`17`, NoVal{Set: true, Number: 17}, false},
		{`2.75`, NoVal{Set: true, Number: 2}, false},
		{`null`, NoVal{}, false},
		{`"soon"`, NoVal{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var got NoVal
			err := json.Unmarshal([]byte(tc.in), &got)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestJobDeadline(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name        string
		job         Job
		want        time.Time
		wantBounded bool
	}{
		{
			name: "end time reported",
			job:  Job{StartTime: NewNoVal(start.Unix()), EndTime: NewNoVal(start.Unix() + 600), TimeLimit: NewNoVal(10)},
			want: start.Add(10 * time.Minute), wantBounded: true,
		},
		{
			name: "end time unset falls back to start plus limit",
			job:  Job{StartTime: NewNoVal(start.Unix()), EndTime: NewNoVal(0), TimeLimit: NewNoVal(90)},
			want: start.Add(90 * time.Minute), wantBounded: true,
		},
		{
			name: "no time limit",
			job:  Job{StartTime: NewNoVal(start.Unix()), EndTime: NewNoVal(start.Unix() + 600), TimeLimit: InfiniteNoVal()},
		},
		{
			name: "not started and no end",
			job:  Job{StartTime: NewNoVal(0), TimeLimit: NewNoVal(5)},
		},
		{
			name: "limit unset",
			job:  Job{StartTime: NewNoVal(start.Unix())},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, bounded := tc.job.Deadline()
			if bounded != tc.wantBounded || !got.Equal(tc.want) {
				t.Errorf("Deadline() = %v, %v; want %v, %v", got, bounded, tc.want, tc.wantBounded)
			}
		})
	}
}

func TestUpdateBodiesMatchSlurmrestd(t *testing.T) {
	tests := []struct {
		name string
		upd  NodeUpdate
		want string
	}{
		{"drain", DrainUpdate("maintenance"), `{"state":["DRAIN"],"reason":"maintenance"}`},
		{"undrain", UndrainUpdate(), `{"state":["UNDRAIN"]}`},
		{"resume", ResumeUpdate(), `{"state":["RESUME"]}`},
		{"comment", CommentUpdate(`{"podName":"a"}`), `{"comment":"{\"podName\":\"a\"}"}`},
		{"clear reason", NodeUpdate{Reason: new(string)}, `{"reason":""}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.upd)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("body = %s, want %s", got, tc.want)
			}
		})
	}
}
