package fake

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gantry-dev/gantry/pkg/slurm"
)

var serverKey = []byte("0123456789abcdef0123456789abcdef")

// serve starts a Server for c checking tokens with key and returns a real
// pkg/slurm client for it that signs with clientKey.
func serve(t *testing.T, c *Client, key, clientKey []byte, opts ...ServerOption) (*Server, slurm.Client, string) {
	t.Helper()
	srv := NewServer(c, append([]ServerOption{WithJWTKey(key)}, opts...)...)
	baseURL, stop := srv.Start()
	t.Cleanup(stop)
	return srv, newClient(t, baseURL, clientKey), baseURL
}

func newClient(t *testing.T, baseURL string, key []byte) slurm.Client {
	t.Helper()
	cl, err := slurm.NewClient(slurm.Config{URL: baseURL, JWTKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// equateEmpty: the wire has [] where the fake may hold nil.
var equateEmpty = cmpopts.EquateEmpty()

func TestServerRoundTrips(t *testing.T) {
	ctx := context.Background()
	idle := slurm.Node{Name: "ns-0", Hostname: "ns-0", Address: "10.0.0.1",
		State: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDynamicNorm},
		CPUs:  8, RealMemory: 1024, Partitions: []string{"debug"}, Features: []string{"gpu"}, ActiveFeatures: []string{"gpu"},
		Comment: `{"namespace":"slurm","podName":"ns-0"}`, ReasonChangedAt: slurm.NewNoVal(1_700_000_000)}
	busy := slurm.Node{Name: "ns-1", State: []slurm.NodeState{slurm.NodeStateMixed}, CPUs: 8, AllocCPUs: 2, AllocMemory: 10}
	slash := slurm.Node{Name: "a/b c", State: []slurm.NodeState{slurm.NodeStateIdle}}
	f := New(idle, busy, slash)
	f.SetJobs(slurm.Job{JobID: 7, Name: "wrap", State: []slurm.JobState{slurm.JobStateRunning}, UserName: "root",
		Partition: "debug", Nodes: "ns-1", StartTime: slurm.NewNoVal(1_700_000_000), TimeLimit: slurm.InfiniteNoVal()},
		slurm.Job{JobID: 8, State: []slurm.JobState{slurm.JobStatePending}})
	_, cl, _ := serve(t, f, serverKey, serverKey)

	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}

	want, _ := f.ListNodes(ctx)
	got, err := cl.ListNodes(ctx)
	if err != nil {
		t.Fatalf("ListNodes: %v", err)
	}
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		t.Errorf("ListNodes over HTTP differs from the fake (-fake +http):\n%s", diff)
	}

	for _, name := range []string{"ns-0", "a/b c"} {
		n, err := cl.GetNode(ctx, name)
		if err != nil {
			t.Fatalf("GetNode(%q): %v", name, err)
		}
		wantNode, _ := f.Node(name)
		if diff := cmp.Diff(wantNode, *n, equateEmpty); diff != "" {
			t.Errorf("GetNode(%q) (-fake +http):\n%s", name, diff)
		}
	}

	// State changed through the fake's Go API shows over HTTP.
	busy.State = []slurm.NodeState{slurm.NodeStateAllocated}
	f.SetNode(busy)
	if n, err := cl.GetNode(ctx, "ns-1"); err != nil || !n.IsAllocated() {
		t.Errorf("GetNode(ns-1) = %+v, %v; want ALLOCATED after SetNode", n, err)
	}

	// Drain with a reason, then resume.
	if err := cl.UpdateNode(ctx, "ns-0", slurm.DrainUpdate("pod deleted")); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if n, _ := f.Node("ns-0"); !n.IsDrained() || n.Reason != "pod deleted" {
		t.Errorf("after drain the fake holds %+v, want drained with reason", n)
	}
	if n, _ := cl.GetNode(ctx, "ns-0"); !n.IsDrained() || n.Reason != "pod deleted" {
		t.Errorf("after drain GetNode = %+v", n)
	}
	if err := cl.UpdateNode(ctx, "ns-0", slurm.ResumeUpdate()); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if n, _ := f.Node("ns-0"); n.IsDrain() || n.Reason != "" {
		t.Errorf("after resume the fake holds %+v, want no DRAIN, no reason", n)
	}
	for _, upd := range []slurm.NodeUpdate{slurm.CommentUpdate("c"), slurm.TopologyUpdate("topo-switch:s1")} {
		if err := cl.UpdateNode(ctx, "a/b c", upd); err != nil {
			t.Fatalf("UpdateNode(%+v): %v", upd, err)
		}
	}
	if n, _ := f.Node("a/b c"); n.Comment != "c" || n.Topology != "topo-switch:s1" {
		t.Errorf("after comment and topology updates the fake holds %+v", n)
	}
	wantUpdates := []NodeUpdateCall{
		{"ns-0", slurm.DrainUpdate("pod deleted")}, {"ns-0", slurm.ResumeUpdate()},
		{"a/b c", slurm.CommentUpdate("c")}, {"a/b c", slurm.TopologyUpdate("topo-switch:s1")},
	}
	if diff := cmp.Diff(wantUpdates, f.Updates()); diff != "" {
		t.Errorf("updates the fake received (-want +got):\n%s", diff)
	}

	// A bad state is refused with slurmctld's error, and is no not-found.
	err = cl.UpdateNode(ctx, "ns-0", slurm.NodeUpdate{State: []slurm.NodeState{"BOGUS"}})
	if err == nil || slurm.IsNotFound(err) || !strings.Contains(err.Error(), "Invalid node state transition") {
		t.Errorf("bad state: err = %v", err)
	}

	// Delete: a node that runs a job stays, an idle one goes.
	if err := cl.DeleteNode(ctx, "ns-1"); err == nil || slurm.IsNotFound(err) {
		t.Errorf("DeleteNode(busy) = %v, want a refusal", err)
	}
	if _, ok := f.Node("ns-1"); !ok {
		t.Error("busy node was deleted")
	}
	if err := cl.DeleteNode(ctx, "ns-0"); err != nil {
		t.Fatalf("DeleteNode(ns-0): %v", err)
	}
	if _, ok := f.Node("ns-0"); ok || !slices.Equal(f.Deleted(), []string{"ns-0"}) {
		t.Errorf("after delete: deleted = %v", f.Deleted())
	}
	if _, err := cl.GetNode(ctx, "ns-0"); !slurm.IsNotFound(err) {
		t.Errorf("GetNode after delete: %v, want not found", err)
	}

	wantJobs, _ := f.ListJobs(ctx)
	jobs, err := cl.ListJobs(ctx)
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	if diff := cmp.Diff(wantJobs, jobs, equateEmpty); diff != "" {
		t.Errorf("ListJobs (-fake +http):\n%s", diff)
	}
	f.SetJobs()
	if jobs, err := cl.ListJobs(ctx); err != nil || len(jobs) != 0 {
		t.Errorf("ListJobs with none = %v, %v", jobs, err)
	}
}

func TestServerUnknownNodeIsNotFound(t *testing.T) {
	ctx := context.Background()
	_, cl, _ := serve(t, New(), serverKey, serverKey)
	tests := []struct {
		name       string
		call       func() error
		wantStatus int
	}{
		{"get", func() error { _, err := cl.GetNode(ctx, "nope"); return err }, http.StatusOK},
		{"update", func() error { return cl.UpdateNode(ctx, "nope", slurm.DrainUpdate("x")) }, http.StatusInternalServerError},
		{"delete", func() error { return cl.DeleteNode(ctx, "nope") }, http.StatusInternalServerError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !slurm.IsNotFound(err) {
				t.Fatalf("err = %v, want not found", err)
			}
			var apiErr *slurm.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.wantStatus {
				t.Errorf("err = %#v, want status %d", err, tc.wantStatus)
			}
			if !strings.Contains(err.Error(), "node nope") {
				t.Errorf("err = %v, want the node named", err)
			}
		})
	}
}

func TestServerInjectedErrors(t *testing.T) {
	ctx := context.Background()
	f := New(slurm.Node{Name: "ns-0", State: []slurm.NodeState{slurm.NodeStateIdle}})
	_, cl, _ := serve(t, f, serverKey, serverKey)

	f.SetError(OpListNodes, errors.New("slurmctld is busy"))
	_, err := cl.ListNodes(ctx)
	var apiErr *slurm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(err.Error(), "slurmctld is busy") {
		t.Errorf("ListNodes = %v, want 500 carrying the injected text", err)
	}
	f.SetError(OpPing, errors.New("down"))
	if err := cl.Ping(ctx); err == nil {
		t.Error("Ping succeeded with an injected error")
	}
	// An injected *slurm.APIError keeps its entries and error status.
	f.SetError(OpListJobs, &slurm.APIError{StatusCode: 502, Errors: []slurm.ErrorEntry{{Description: "x", ErrorNumber: 1007}}})
	if _, err := cl.ListJobs(ctx); !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || !apiErr.HasErrorNumber(slurm.ErrorNumberAuthentication) {
		t.Errorf("ListJobs = %v, want 502 with error 1007", err)
	}
	// An injected not-found gets slurmrestd's not-found answer.
	f.SetError(OpGetNode, slurm.NewNotFoundError("ns-0"))
	if _, err := cl.GetNode(ctx, "ns-0"); !slurm.IsNotFound(err) {
		t.Errorf("GetNode = %v, want not found", err)
	}
	f.SetError(OpGetNode, nil)
	if _, err := cl.GetNode(ctx, "ns-0"); err != nil {
		t.Errorf("GetNode after clearing = %v", err)
	}
}

func TestServerAuthentication(t *testing.T) {
	ctx := context.Background()
	f := New(slurm.Node{Name: "ns-0"})

	t.Run("wrong key", func(t *testing.T) {
		srv, cl, _ := serve(t, f, serverKey, []byte("not the cluster key"))
		_, err := cl.ListNodes(ctx)
		var apiErr *slurm.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
			t.Fatalf("err = %v, want 401", err)
		}
		if srv.Unauthorized() != 1 || srv.Requests()[RequestListNodes] != 1 {
			t.Errorf("unauthorized = %d, requests = %v", srv.Unauthorized(), srv.Requests())
		}
	})

	t.Run("expired token", func(t *testing.T) {
		// The client signs with a clock an hour behind the server's, so its
		// 30-minute tokens have expired when they arrive.
		_, _, baseURL := serve(t, f, serverKey, serverKey)
		cl, err := slurm.NewClient(slurm.Config{URL: baseURL, JWTKey: serverKey,
			Now: func() time.Time { return time.Now().Add(-time.Hour) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Ping(ctx); statusOf(err) != http.StatusUnauthorized {
			t.Errorf("err = %v, want 401", err)
		}
	})

	t.Run("server clock", func(t *testing.T) {
		_, cl, _ := serve(t, f, serverKey, serverKey,
			WithServerClock(func() time.Time { return time.Now().Add(2 * slurm.DefaultTokenLifetime) }))
		if err := cl.Ping(ctx); statusOf(err) != http.StatusUnauthorized {
			t.Errorf("err = %v, want 401 from a server whose clock is past expiry", err)
		}
	})

	t.Run("no token or another user", func(t *testing.T) {
		_, _, baseURL := serve(t, f, serverKey, serverKey)
		token, err := slurm.SignToken(serverKey, slurm.TokenClaims{UserName: "slurm", ExpiresAt: time.Now().Add(time.Hour).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		for _, hdr := range []map[string]string{
			{},
			{slurm.HeaderUserName: "slurm", slurm.HeaderUserToken: "garbage"},
			{slurm.HeaderUserName: "root", slurm.HeaderUserToken: token},
		} {
			if code := rawStatus(t, http.MethodGet, baseURL+"/slurm/v0.0.44/ping", hdr, "", ""); code != http.StatusUnauthorized {
				t.Errorf("headers %v: status %d, want 401", hdr, code)
			}
		}
		hdr := map[string]string{slurm.HeaderUserName: "slurm", slurm.HeaderUserToken: token}
		if code := rawStatus(t, http.MethodGet, baseURL+"/slurm/v0.0.44/ping", hdr, "", ""); code != http.StatusOK {
			t.Errorf("valid token: status %d, want 200", code)
		}
	})

	t.Run("no key, no check", func(t *testing.T) {
		srv := NewServer(f)
		baseURL, stop := srv.Start()
		defer stop()
		if err := newClient(t, baseURL, []byte("any key")).Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
		if code := rawStatus(t, http.MethodGet, baseURL+"/slurm/v0.0.44/nodes", nil, "", ""); code != http.StatusOK {
			t.Errorf("no token: status %d, want 200", code)
		}
	})
}

// rawStatus sends a request the real client would not and returns the status.
func rawStatus(t *testing.T, method, url string, headers map[string]string, contentType, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	var env struct {
		Errors []slurm.ErrorEntry `json:"errors"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		t.Errorf("%s %s: answer is not slurmrestd JSON: %q", method, url, data)
	}
	if resp.StatusCode >= 300 && len(env.Errors) == 0 {
		t.Errorf("%s %s: status %d without errors[]", method, url, resp.StatusCode)
	}
	return resp.StatusCode
}

func TestServerRejectsWhatSlurmrestdRejects(t *testing.T) {
	srv := NewServer(New(slurm.Node{Name: "ns-0"}))
	baseURL, stop := srv.Start()
	defer stop()
	tests := []struct {
		name, method, path, contentType, body string
		want                                  int
	}{
		{"unknown endpoint", "GET", "/slurm/v0.0.44/partitions", "", "", 404},
		{"other version", "GET", "/slurm/v0.0.40/nodes", "", "", 404},
		{"node without name", "GET", "/slurm/v0.0.44/node/", "", "", 404},
		{"node sub-path", "GET", "/slurm/v0.0.44/node/ns-0/x", "", "", 404},
		{"wrong method", "PUT", "/slurm/v0.0.44/node/ns-0", "", "", 405},
		{"post to nodes", "POST", "/slurm/v0.0.44/nodes", "application/json", "{}", 405},
		{"bad json", "POST", "/slurm/v0.0.44/node/ns-0", "application/json", "{", 400},
		{"form body", "POST", "/slurm/v0.0.44/node/ns-0", "application/x-www-form-urlencoded", "state=DRAIN", 415},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rawStatus(t, tc.method, baseURL+tc.path, nil, tc.contentType, tc.body); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
}

// TestServerAnswersHaveSlurmrestdShape compares the top-level keys of each
// answer, and of each node and job, with the captures from a real
// slurmrestd.
func TestServerAnswersHaveSlurmrestdShape(t *testing.T) {
	f := New(slurm.Node{Name: "ns-0"})
	f.SetJobs(slurm.Job{JobID: 1})
	srv := NewServer(f)
	baseURL, stop := srv.Start()
	defer stop()
	for _, tc := range []struct{ path, fixture, list string }{
		{"ping", "ping.json", "pings"},
		{"nodes", "nodes.json", "nodes"},
		{"node/ns-0", "nodes.json", "nodes"},
		{"jobs", "jobs.json", "jobs"},
		{"node/nope", "get_unknown_node.json", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			data, err := os.ReadFile("../testdata/" + tc.fixture)
			if err != nil {
				t.Fatal(err)
			}
			want := decodeObject(t, data)
			resp, err := http.Get(baseURL + "/slurm/v0.0.44/" + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			got := decodeObject(t, body)
			if diff := cmp.Diff(sortedKeys(want), sortedKeys(got)); diff != "" {
				t.Errorf("top-level keys (-slurmrestd +fake):\n%s", diff)
			}
			if tc.list == "" {
				return
			}
			wantItem := decodeObject(t, firstItem(t, want[tc.list]))
			gotItem := decodeObject(t, firstItem(t, got[tc.list]))
			for k := range gotItem {
				if _, ok := wantItem[k]; !ok {
					t.Errorf("%s item has key %q slurmrestd does not send", tc.list, k)
				}
			}
			if tc.list == "pings" {
				return
			}
			// Every field the client reads is there.
			fields := jsonKeys(t, fullJob)
			if tc.list == "nodes" {
				fields = jsonKeys(t, fullNode)
			}
			for _, k := range fields {
				if _, ok := gotItem[k]; !ok {
					t.Errorf("%s item lacks %q", tc.list, k)
				}
			}
		})
	}
}

func decodeObject(t *testing.T, data []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %q", err, data)
	}
	return m
}

func firstItem(t *testing.T, list json.RawMessage) []byte {
	t.Helper()
	var items []json.RawMessage
	if err := json.Unmarshal(list, &items); err != nil || len(items) == 0 {
		t.Fatalf("list %s: %v", list, err)
	}
	return items[0]
}

func sortedKeys(m map[string]json.RawMessage) []string {
	return slices.Sorted(maps.Keys(m))
}

// jsonKeys names the JSON fields of v, marshalled with every field set.
func jsonKeys(t *testing.T, v any) []string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return sortedKeys(decodeObject(t, data))
}

var (
	fullNode = slurm.Node{Name: "n", Hostname: "h", Address: "a", State: []slurm.NodeState{"IDLE"}, Reason: "r",
		ReasonSetByUser: "u", ReasonChangedAt: slurm.NewNoVal(1), Comment: "c", CPUs: 1, AllocCPUs: 1,
		AllocIdleCPUs: 1, RealMemory: 1, AllocMemory: 1, Partitions: []string{"p"}, Features: []string{"f"}, ActiveFeatures: []string{"f"}, Topology: "t"}
	fullJob = slurm.Job{JobID: 1, Name: "n", State: []slurm.JobState{"RUNNING"}, UserName: "u", Partition: "p",
		Nodes: "n", StartTime: slurm.NewNoVal(1), EndTime: slurm.NewNoVal(1), TimeLimit: slurm.NewNoVal(1)}
)

func TestServerCountsRequests(t *testing.T) {
	ctx := context.Background()
	f := New(slurm.Node{Name: "ns-0", State: []slurm.NodeState{slurm.NodeStateIdle}})
	srv, _, baseURL := serve(t, f, serverKey, serverKey)

	// The client's observer names operations as the server counts them.
	var mu sync.Mutex
	observed := map[string]int{}
	cl, err := slurm.NewClient(slurm.Config{URL: baseURL, JWTKey: serverKey,
		Observer: func(op string, _ int, _ time.Duration, _ error) {
			mu.Lock()
			defer mu.Unlock()
			observed[op]++
		}})
	if err != nil {
		t.Fatal(err)
	}
	_ = cl.Ping(ctx)
	for range 3 {
		_, _ = cl.ListNodes(ctx)
	}
	_, _ = cl.GetNode(ctx, "ns-0")
	_, _ = cl.GetNode(ctx, "nope")
	_ = cl.UpdateNode(ctx, "ns-0", slurm.DrainUpdate("x"))
	_ = cl.DeleteNode(ctx, "ns-0")
	_, _ = cl.ListJobs(ctx)

	// Concurrent requests are all counted.
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { _, _ = cl.ListNodes(ctx) })
	}
	wg.Wait()

	want := map[string]int{
		RequestPing: 1, RequestListNodes: 23, RequestGetNode: 2,
		RequestUpdateNode: 1, RequestDeleteNode: 1, RequestListJobs: 1,
	}
	if diff := cmp.Diff(want, srv.Requests()); diff != "" {
		t.Errorf("server counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, observed); diff != "" {
		t.Errorf("client observer (-want +got):\n%s", diff)
	}
	if got := f.Calls(OpListNodes); got != 23 {
		t.Errorf("fake ListNodes calls = %d, want 23", got)
	}

	srv.ResetRequests()
	if len(srv.Requests()) != 0 || srv.Unauthorized() != 0 {
		t.Errorf("after reset: %v, %d", srv.Requests(), srv.Unauthorized())
	}
}

func TestServerStop(t *testing.T) {
	srv := NewServer(New())
	baseURL, stop := srv.Start()
	cl := newClient(t, baseURL, serverKey)
	if err := cl.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop()
	stop() // idempotent
	if err := cl.Ping(context.Background()); err == nil {
		t.Error("Ping succeeded after stop")
	}
	// The same address can be served again, as after a slurmrestd restart.
	addr := strings.TrimPrefix(baseURL, "http://")
	again, stop2, err := srv.Listen(addr)
	if err != nil {
		t.Fatalf("Listen(%s): %v", addr, err)
	}
	defer stop2()
	if again != baseURL {
		t.Errorf("URL %s, want %s", again, baseURL)
	}
	if err := cl.Ping(context.Background()); err != nil {
		t.Errorf("Ping after restart: %v", err)
	}
}

// statusOf is the HTTP status of a slurmrestd error, 0 for any other error.
func statusOf(err error) int {
	var apiErr *slurm.APIError
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}
