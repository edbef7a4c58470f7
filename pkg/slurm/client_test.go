package slurm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// restd mimics slurmrestd v0.0.44 with rest_auth/jwt: it checks the token
// the way slurmctld does (signature, sun matching the user header, expiry)
// and answers from the fixtures captured from a real slurmrestd.
type restd struct {
	t      *testing.T
	server *httptest.Server
	now    time.Time

	mu       sync.Mutex
	requests []recordedRequest
	// routes maps "METHOD path" to a status and a fixture file or literal body.
	routes map[string]route
	// blocked receives when a blocking route has a request in hand.
	blocked chan struct{}
}

type route struct {
	status  int
	fixture string
	body    string
	// block makes the handler wait for the client to give up.
	block bool
}

type recordedRequest struct {
	method, path, contentType, body string
	claims                          TokenClaims
}

func newRestd(t *testing.T, routes map[string]route) *restd {
	t.Helper()
	r := &restd{t: t, routes: routes, now: time.Unix(1_800_000_000, 0), blocked: make(chan struct{}, 1)}
	r.server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.server.Close)
	return r
}

func (r *restd) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	claims, err := VerifyToken(testKey, req.Header.Get(HeaderUserToken), r.now)
	if err != nil || claims.UserName != req.Header.Get(HeaderUserName) {
		w.WriteHeader(511)
		_, _ = w.Write(readFixture(r.t, "auth_error.json"))
		return
	}
	r.mu.Lock()
	r.requests = append(r.requests, recordedRequest{
		method: req.Method, path: req.URL.EscapedPath(),
		contentType: req.Header.Get("Content-Type"), body: string(body), claims: claims,
	})
	rt, ok := r.routes[req.Method+" "+req.URL.EscapedPath()]
	r.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("Not Found"))
		return
	}
	if rt.block {
		r.blocked <- struct{}{}
		<-req.Context().Done()
		return
	}
	data := []byte(rt.body)
	if rt.fixture != "" {
		data = readFixture(r.t, rt.fixture)
	}
	w.WriteHeader(rt.status)
	_, _ = w.Write(data)
}

func (r *restd) lastRequest() recordedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.requests) == 0 {
		r.t.Fatal("no request reached the server")
	}
	return r.requests[len(r.requests)-1]
}

func (r *restd) client(t *testing.T, key []byte) Client {
	t.Helper()
	c, err := NewClient(Config{URL: r.server.URL, JWTKey: key, Now: func() time.Time { return r.now }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const okEmpty = `{"errors":[],"warnings":[]}`

func TestClientSendsSignedRequests(t *testing.T) {
	srv := newRestd(t, map[string]route{
		"GET /slurm/v0.0.44/nodes": {status: 200, fixture: "nodes.json"},
	})
	nodes, err := srv.client(t, testKey).ListNodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[1].Name != "dyn5" || !nodes[1].IsDrained() {
		t.Errorf("nodes = %+v", nodes)
	}
	got := srv.lastRequest()
	if got.claims.UserName != DefaultUserName || got.claims.IssuedAt != srv.now.Unix() ||
		got.claims.ExpiresAt != srv.now.Add(DefaultTokenLifetime).Unix() {
		t.Errorf("claims = %+v", got.claims)
	}
}

func TestClientCalls(t *testing.T) {
	tests := []struct {
		name     string
		routes   map[string]route
		call     func(context.Context, Client) (any, error)
		wantReq  recordedRequest
		checkOut func(t *testing.T, out any)
	}{
		{
			name:    "ping",
			routes:  map[string]route{"GET /slurm/v0.0.44/ping": {status: 200, fixture: "ping.json"}},
			call:    func(ctx context.Context, c Client) (any, error) { return nil, c.Ping(ctx) },
			wantReq: recordedRequest{method: "GET", path: "/slurm/v0.0.44/ping"},
		},
		{
			name:    "get node",
			routes:  map[string]route{"GET /slurm/v0.0.44/node/dyn5": {status: 200, fixture: "nodes.json"}},
			call:    func(ctx context.Context, c Client) (any, error) { return c.GetNode(ctx, "dyn5") },
			wantReq: recordedRequest{method: "GET", path: "/slurm/v0.0.44/node/dyn5"},
			checkOut: func(t *testing.T, out any) {
				if n := out.(*Node); n.Name != "dyn5" || n.Reason != "kubernetes node cordoned" {
					t.Errorf("node = %+v, want dyn5 with its reason", n)
				}
			},
		},
		{
			name:   "drain",
			routes: map[string]route{"POST /slurm/v0.0.44/node/gpu-0": {status: 200, body: okEmpty}},
			call: func(ctx context.Context, c Client) (any, error) {
				return nil, c.UpdateNode(ctx, "gpu-0", DrainUpdate("pod deleted"))
			},
			wantReq: recordedRequest{method: "POST", path: "/slurm/v0.0.44/node/gpu-0",
				contentType: "application/json", body: `{"state":["DRAIN"],"reason":"pod deleted"}`},
		},
		{
			name:   "node name is escaped",
			routes: map[string]route{"POST /slurm/v0.0.44/node/a%20b": {status: 200, body: okEmpty}},
			call: func(ctx context.Context, c Client) (any, error) {
				return nil, c.UpdateNode(ctx, "a b", ResumeUpdate())
			},
			wantReq: recordedRequest{method: "POST", path: "/slurm/v0.0.44/node/a%20b",
				contentType: "application/json", body: `{"state":["RESUME"]}`},
		},
		{
			name:    "delete node",
			routes:  map[string]route{"DELETE /slurm/v0.0.44/node/ds-gone": {status: 200, body: okEmpty}},
			call:    func(ctx context.Context, c Client) (any, error) { return nil, c.DeleteNode(ctx, "ds-gone") },
			wantReq: recordedRequest{method: "DELETE", path: "/slurm/v0.0.44/node/ds-gone"},
		},
		{
			name:    "list jobs",
			routes:  map[string]route{"GET /slurm/v0.0.44/jobs": {status: 200, fixture: "jobs.json"}},
			call:    func(ctx context.Context, c Client) (any, error) { return c.ListJobs(ctx) },
			wantReq: recordedRequest{method: "GET", path: "/slurm/v0.0.44/jobs"},
			checkOut: func(t *testing.T, out any) {
				if jobs := out.([]Job); len(jobs) != 2 || jobs[1].JobID != 2 {
					t.Errorf("jobs = %+v", jobs)
				}
			},
		},
		{
			name: "zero jobs is a warning, not an error",
			routes: map[string]route{"GET /slurm/v0.0.44/jobs": {status: 200,
				body: `{"jobs":[],"errors":[],"warnings":[{"description":"Zero jobs to dump","source":""}]}`}},
			call:    func(ctx context.Context, c Client) (any, error) { return c.ListJobs(ctx) },
			wantReq: recordedRequest{method: "GET", path: "/slurm/v0.0.44/jobs"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRestd(t, tc.routes)
			out, err := tc.call(context.Background(), srv.client(t, testKey))
			if err != nil {
				t.Fatal(err)
			}
			got := srv.lastRequest()
			got.claims = TokenClaims{}
			if got != tc.wantReq {
				t.Errorf("request = %+v, want %+v", got, tc.wantReq)
			}
			if tc.checkOut != nil {
				tc.checkOut(t, out)
			}
		})
	}
}

func TestClientSurfacesServerErrors(t *testing.T) {
	tests := []struct {
		name         string
		key          []byte
		routes       map[string]route
		call         func(context.Context, Client) error
		wantText     []string
		wantNotFound bool
		wantAuth     bool
	}{
		{
			name:   "unknown node on update (422 with errors[])",
			routes: map[string]route{"POST /slurm/v0.0.44/node/nope": {status: 422, fixture: "update_unknown_node.json"}},
			call: func(ctx context.Context, c Client) error {
				return c.UpdateNode(ctx, "nope", DrainUpdate("x"))
			},
			wantText:     []string{"422", "Failure to update node nope", "Invalid node name specified", "error 2018"},
			wantNotFound: true,
		},
		{
			name:   "unknown node on get (200 with errors[])",
			routes: map[string]route{"GET /slurm/v0.0.44/node/nope": {status: 200, fixture: "get_unknown_node.json"}},
			call: func(ctx context.Context, c Client) error {
				_, err := c.GetNode(ctx, "nope")
				return err
			},
			wantText:     []string{"Failure to query node nope"},
			wantNotFound: true,
		},
		{
			name:   "bad state (500 with two errors)",
			routes: map[string]route{"POST /slurm/v0.0.44/node/dyn1": {status: 500, fixture: "update_bad_state.json"}},
			call: func(ctx context.Context, c Client) error {
				return c.UpdateNode(ctx, "dyn1", NodeUpdate{State: []NodeState{"BOGUS"}})
			},
			wantText: []string{`Unknown flag "BOGUS"`, "Invalid node state transition"},
		},
		{
			name:   "token signed with the wrong key",
			key:    []byte("not the cluster key"),
			routes: map[string]route{"GET /slurm/v0.0.44/nodes": {status: 200, fixture: "nodes.json"}},
			call: func(ctx context.Context, c Client) error {
				_, err := c.ListNodes(ctx)
				return err
			},
			wantText: []string{"511", "Protocol authentication error"},
			wantAuth: true,
		},
		{
			name:     "plain-text failure body",
			routes:   map[string]route{"GET /slurm/v0.0.44/ping": {status: 401, body: "Authentication failure"}},
			call:     func(ctx context.Context, c Client) error { return c.Ping(ctx) },
			wantText: []string{"401 Unauthorized", "Authentication failure"},
			wantAuth: true,
		},
		{
			name: "no slurmctld responding",
			routes: map[string]route{"GET /slurm/v0.0.44/ping": {status: 200,
				body: `{"pings":[{"hostname":"ctld-0","pinged":"DOWN","responding":false}],"errors":[]}`}},
			call:     func(ctx context.Context, c Client) error { return c.Ping(ctx) },
			wantText: []string{"ctld-0 DOWN"},
		},
		{
			name:     "garbage with 200",
			routes:   map[string]route{"GET /slurm/v0.0.44/jobs": {status: 200, body: "<html>"}},
			call:     func(ctx context.Context, c Client) error { _, err := c.ListJobs(ctx); return err },
			wantText: []string{"decoding response"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRestd(t, tc.routes)
			key := tc.key
			if key == nil {
				key = testKey
			}
			err := tc.call(context.Background(), srv.client(t, key))
			if err == nil {
				t.Fatal("call succeeded, want error")
			}
			for _, want := range tc.wantText {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if got := IsNotFound(err); got != tc.wantNotFound {
				t.Errorf("IsNotFound = %v, want %v (%v)", got, tc.wantNotFound, err)
			}
			if got := isAuthError(err); got != tc.wantAuth {
				t.Errorf("IsAuthError = %v, want %v (%v)", got, tc.wantAuth, err)
			}
		})
	}
}

func TestClientHonoursContext(t *testing.T) {
	srv := newRestd(t, map[string]route{"GET /slurm/v0.0.44/nodes": {block: true}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := srv.client(t, testKey).ListNodes(ctx)
		done <- err
	}()
	// Cancel only once the request is in the server, so the test proves an
	// in-flight call is abandoned.
	<-srv.blocked
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestNewClientValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no url", Config{JWTKey: testKey}},
		{"bad scheme", Config{URL: "ftp://x", JWTKey: testKey}},
		{"no key", Config{URL: "http://x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewClient(tc.cfg); err == nil {
				t.Error("NewClient succeeded, want error")
			}
		})
	}
}

func TestClientTellsTheObserver(t *testing.T) {
	srv := newRestd(t, map[string]route{
		"GET /slurm/v0.0.44/nodes":      {status: 200, fixture: "nodes.json"},
		"POST /slurm/v0.0.44/node/dyn5": {status: 500, body: `{"errors":[{"error":"boom","error_number":1}]}`},
	})
	type call struct {
		op   string
		code int
		err  bool
	}
	var calls []call
	now := srv.now
	c, err := NewClient(Config{URL: srv.server.URL, JWTKey: testKey,
		Now: func() time.Time { now = now.Add(time.Second); return now },
		Observer: func(op string, code int, elapsed time.Duration, err error) {
			// Each read of the clock moves it a second; the token is
			// signed in between, so a request takes at least one.
			if elapsed < time.Second {
				t.Errorf("%s took %v by the client's clock, want the time between send and answer", op, elapsed)
			}
			calls = append(calls, call{op, code, err != nil})
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv.now = now.Add(-time.Minute) // tokens stay valid for the server
	if _, err := c.ListNodes(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateNode(context.Background(), "dyn5", NodeUpdate{Reason: ptr.To("x")}); err == nil {
		t.Fatal("the 500 was not an error")
	}
	want := []call{{"GET nodes", 200, false}, {"POST node", 500, true}}
	if !slices.Equal(calls, want) {
		t.Fatalf("observed %+v, want %+v", calls, want)
	}
}

// isAuthError reports whether slurmrestd or slurmctld rejected the
// credentials, which usually means the jwt key Secret does not match the
// key slurmctld was started with.
func isAuthError(err error) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.StatusCode == http.StatusUnauthorized ||
		apiErr.StatusCode == http.StatusForbidden ||
		apiErr.HasErrorNumber(ErrorNumberAuthentication)
}
