package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gantry-dev/gantry/pkg/slurm"
)

// Request keys Server.Requests counts under: the method and the endpoint's
// first segment, as slurm.Config.Observer names operations.
const (
	RequestPing       = "GET ping"
	RequestListNodes  = "GET nodes"
	RequestGetNode    = "GET node"
	RequestUpdateNode = "POST node"
	RequestDeleteNode = "DELETE node"
	RequestListJobs   = "GET jobs"
)

// apiPrefix is where slurmrestd serves the data parser the client speaks.
const apiPrefix = "/slurm/" + slurm.APIVersion + "/"

// maxRequestBytes bounds a request body; a node update is a few bytes.
const maxRequestBytes = 1 << 20

// Server is an HTTP slurmrestd (v0.0.44) in front of a fake Client, for a
// process that needs a real URL (a manager run as its own OS process). Each
// request is answered from the Client's state, so a test changes nodes and
// jobs through the Client's Go API while the process reads them over HTTP;
// the Client's error injection and call counts apply to served requests
// too. It serves only what slurm.NewClient's client calls:
//
//	GET    /slurm/v0.0.44/ping
//	GET    /slurm/v0.0.44/nodes
//	GET    /slurm/v0.0.44/node/{name}
//	POST   /slurm/v0.0.44/node/{name}   (application/json slurm.NodeUpdate)
//	DELETE /slurm/v0.0.44/node/{name}
//	GET    /slurm/v0.0.44/jobs
//
// Answers have the shape of the captures in pkg/slurm/testdata. A node the
// Client does not know gets slurmrestd's answers: 200 with "Failure to query
// node x" (error number 0) on GET, 500 with error 2018 on POST and DELETE.
// Other Client errors become 500 with an errors array (an *slurm.APIError
// keeps its entries, and its status when that is 400 or above). Query
// parameters are ignored; the client sends none. An unknown path gets 404,
// a known path with another method 405. A token that fails the check of
// WithJWTKey gets 401 (slurmrestd's ESLURM_AUTH_CRED_INVALID/EXPIRED).
type Server struct {
	client *Client
	key    []byte
	now    func() time.Time

	mu           sync.Mutex
	requests     map[string]int
	unauthorized int
}

var _ http.Handler = (*Server)(nil)

// ServerOption customises a Server.
type ServerOption func(*Server)

// WithJWTKey makes the Server check every request's X-SLURM-USER-TOKEN the
// way slurmctld's auth/jwt does: an HS256 signature made with key, an "exp"
// in the future and a "sun" claim equal to X-SLURM-USER-NAME when that header
// is sent. Requests that fail get 401. Without a key nothing is checked.
func WithJWTKey(key []byte) ServerOption {
	return func(s *Server) { s.key = append([]byte(nil), key...) }
}

// WithServerClock replaces time.Now for token expiry and timestamps.
func WithServerClock(now func() time.Time) ServerOption {
	return func(s *Server) { s.now = now }
}

// NewServer returns a Server answering from c. It does not listen; use it
// as an http.Handler or call Start or Listen.
func NewServer(c *Client, opts ...ServerOption) *Server {
	s := &Server{client: c, now: time.Now, requests: map[string]int{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Start listens on 127.0.0.1 at a free port and returns the base URL to put
// in slurm.Config.URL and a stop function that closes the listener and every
// connection. It panics when it cannot listen, as httptest.NewServer does.
func (s *Server) Start() (baseURL string, stop func()) {
	baseURL, stop, err := s.Listen("127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fake slurmrestd: %v", err))
	}
	return baseURL, stop
}

// Listen serves on addr ("127.0.0.1:0" for a free port; a fixed address lets
// a test stop the server and bring it back where clients expect it). stop is
// safe to call more than once and returns once the server has stopped.
func (s *Server) Listen(addr string) (baseURL string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = srv.Close()
			<-done
		})
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// Requests returns how many requests arrived per operation ("GET nodes",
// "POST node", ...; see the Request constants), rejected ones included. A
// request outside the API is counted under its method and path.
func (s *Server) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.requests))
	for k, v := range s.requests {
		out[k] = v
	}
	return out
}

// Unauthorized returns how many requests were refused for their token.
func (s *Server) Unauthorized() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unauthorized
}

// ResetRequests zeroes Requests and Unauthorized.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = map[string]int{}
	s.unauthorized = 0
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	endpoint, inAPI := strings.CutPrefix(r.URL.EscapedPath(), apiPrefix)
	first, rest, hasRest := strings.Cut(endpoint, "/")
	op := r.Method + " " + first
	if !inAPI {
		op = r.Method + " " + r.URL.EscapedPath()
	}
	s.mu.Lock()
	s.requests[op]++
	s.mu.Unlock()

	if !s.authenticated(r) {
		s.mu.Lock()
		s.unauthorized++
		s.mu.Unlock()
		s.writeJSON(w, http.StatusUnauthorized, s.envelope([]slurm.ErrorEntry{{
			Description: "Authentication failure",
			ErrorNumber: slurm.ErrorNumberAuthentication,
			Error:       "Protocol authentication error",
			Source:      "rest_auth/jwt",
		}}), nil)
		return
	}

	ctx := r.Context()
	switch {
	case inAPI && !hasRest && (first == "ping" || first == "nodes" || first == "jobs"):
		if r.Method != http.MethodGet {
			s.methodNotAllowed(w, http.MethodGet)
			return
		}
		switch first {
		case "ping":
			s.ping(ctx, w)
		case "nodes":
			s.listNodes(ctx, w)
		default:
			s.listJobs(ctx, w)
		}
	case inAPI && hasRest && first == "node" && rest != "" && !strings.Contains(rest, "/"):
		name, err := url.PathUnescape(rest)
		if err != nil {
			s.notFoundURL(w)
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.getNode(ctx, w, name)
		case http.MethodPost:
			s.updateNode(ctx, w, r, name)
		case http.MethodDelete:
			s.deleteNode(ctx, w, name)
		default:
			s.methodNotAllowed(w, "GET, POST, DELETE")
		}
	default:
		s.notFoundURL(w)
	}
}

func (s *Server) authenticated(r *http.Request) bool {
	if len(s.key) == 0 {
		return true
	}
	claims, err := slurm.VerifyToken(s.key, r.Header.Get(slurm.HeaderUserToken), s.now())
	if err != nil {
		return false
	}
	user := r.Header.Get(slurm.HeaderUserName)
	return user == "" || user == claims.UserName
}

func (s *Server) ping(ctx context.Context, w http.ResponseWriter) {
	if err := s.client.Ping(ctx); err != nil {
		s.writeError(w, err)
		return
	}
	body := s.envelope(nil)
	body["pings"] = []map[string]any{{
		"hostname":   "fake-slurmctld",
		"pinged":     "UP",
		"responding": true,
		"latency":    1,
		"mode":       "primary",
		"primary":    true,
	}}
	s.writeJSON(w, http.StatusOK, body, nil)
}

func (s *Server) listNodes(ctx context.Context, w http.ResponseWriter) {
	nodes, err := s.client.ListNodes(ctx)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeNodes(w, nodes)
}

func (s *Server) getNode(ctx context.Context, w http.ResponseWriter, name string) {
	n, err := s.client.GetNode(ctx, name)
	if slurm.IsNotFound(err) {
		// What slurmrestd v0.0.44 answers (testdata/get_unknown_node.json).
		s.writeJSON(w, http.StatusOK, s.envelope([]slurm.ErrorEntry{{
			Description: "Failure to query node " + name,
			Error:       "No error",
			Source:      "_dump_nodes",
		}}), nil)
		return
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeNodes(w, []slurm.Node{*n})
}

func (s *Server) updateNode(ctx context.Context, w http.ResponseWriter, r *http.Request, name string) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		// slurmrestd would parse the body as a form and silently do
		// nothing; a fake should say so instead.
		s.writeJSON(w, http.StatusUnsupportedMediaType, s.envelope([]slurm.ErrorEntry{{
			Description: fmt.Sprintf("fake slurmrestd: Content-Type %q, want application/json", r.Header.Get("Content-Type")),
			Source:      "fake",
		}}), nil)
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes))
	var upd slurm.NodeUpdate
	if err == nil {
		err = json.Unmarshal(data, &upd)
	}
	if err != nil {
		// ESLURM_REST_FAIL_PARSING, which slurmrestd answers with 400.
		s.writeJSON(w, http.StatusBadRequest, s.envelope([]slurm.ErrorEntry{{
			Description: "Unable to parse request body: " + err.Error(),
			ErrorNumber: 9001,
			Error:       "Failed to parse request",
			Source:      "fake",
		}}), nil)
		return
	}
	if err := s.client.UpdateNode(ctx, name, upd); err != nil {
		if slurm.IsNotFound(err) {
			s.writeUnknownNode(w, "update", name)
			return
		}
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.envelope(nil), nil)
}

func (s *Server) deleteNode(ctx context.Context, w http.ResponseWriter, name string) {
	if err := s.client.DeleteNode(ctx, name); err != nil {
		if slurm.IsNotFound(err) {
			s.writeUnknownNode(w, "delete", name)
			return
		}
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.envelope(nil), nil)
}

func (s *Server) listJobs(ctx context.Context, w http.ResponseWriter) {
	jobs, err := s.client.ListJobs(ctx)
	if err != nil {
		s.writeError(w, err)
		return
	}
	wire := make([]jobJSON, len(jobs))
	for i, j := range jobs {
		wire[i] = toJobJSON(j)
	}
	body := s.envelope(nil)
	body["jobs"] = wire
	body["last_backfill"] = slurm.NewNoVal(0)
	body["last_update"] = slurm.NewNoVal(s.now().Unix())
	var warnings []warningJSON
	if len(jobs) == 0 {
		warnings = []warningJSON{{Description: "Zero jobs to dump"}}
	}
	s.writeJSON(w, http.StatusOK, body, warnings)
}

func (s *Server) writeNodes(w http.ResponseWriter, nodes []slurm.Node) {
	wire := make([]nodeJSON, len(nodes))
	for i, n := range nodes {
		wire[i] = toNodeJSON(n)
	}
	body := s.envelope(nil)
	body["nodes"] = wire
	body["last_update"] = slurm.NewNoVal(s.now().Unix())
	s.writeJSON(w, http.StatusOK, body, nil)
}

// writeUnknownNode is slurmrestd's answer to an update or delete of a node
// slurmctld does not know (testdata/update_unknown_node.json). Its status is
// slurmrestd's http_status_from_error(ESLURM_INVALID_NODE_NAME): 500, as for
// every Slurm error it has no mapping for.
func (s *Server) writeUnknownNode(w http.ResponseWriter, verb, name string) {
	s.writeJSON(w, http.StatusInternalServerError, s.envelope([]slurm.ErrorEntry{{
		Description: "Failure to " + verb + " node " + name,
		ErrorNumber: slurm.ErrorNumberInvalidNodeName,
		Error:       "Invalid node name specified",
		Source:      "_" + verb + "_node",
	}}), nil)
}

// writeError answers a Client error with 500 (or an *slurm.APIError's own
// status when it is an error status) and its entries.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var entries []slurm.ErrorEntry
	var apiErr *slurm.APIError
	if errors.As(err, &apiErr) {
		if apiErr.StatusCode >= 400 {
			status = apiErr.StatusCode
		}
		entries = append(entries, apiErr.Errors...)
	}
	if len(entries) == 0 {
		entries = []slurm.ErrorEntry{{Description: err.Error(), Source: "fake"}}
	}
	s.writeJSON(w, status, s.envelope(entries), nil)
}

// methodNotAllowed is ESLURM_REST_UNKNOWN_URL_METHOD's answer.
func (s *Server) methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	s.writeJSON(w, http.StatusMethodNotAllowed, s.envelope([]slurm.ErrorEntry{{
		Description: "Unknown method for requested URL",
		Source:      "fake",
	}}), nil)
}

// notFoundURL is ESLURM_REST_UNKNOWN_URL's answer.
func (s *Server) notFoundURL(w http.ResponseWriter) {
	s.writeJSON(w, http.StatusNotFound, s.envelope([]slurm.ErrorEntry{{
		Description: "Unable to find requested URL",
		Source:      "fake",
	}}), nil)
}

type warningJSON struct {
	Description string `json:"description"`
	Source      string `json:"source"`
}

// envelope is the part every v0.0.44 answer shares; writeJSON adds the
// warnings.
func (s *Server) envelope(errs []slurm.ErrorEntry) map[string]any {
	if errs == nil {
		errs = []slurm.ErrorEntry{}
	}
	return map[string]any{
		"errors": errs,
		"meta": map[string]any{
			"plugin": map[string]any{
				"type":               "openapi/slurmctld",
				"name":               "Slurm OpenAPI slurmctld",
				"data_parser":        "data_parser/" + slurm.APIVersion,
				"accounting_storage": "",
			},
			"client":  map[string]any{"source": "fake", "user": "slurm", "group": "slurm"},
			"command": []string{},
			"slurm": map[string]any{
				"version": map[string]any{"major": "26", "micro": "5", "minor": "05"},
				"release": "26.05.5",
				"cluster": "fake",
			},
		},
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, body map[string]any, warnings []warningJSON) {
	if warnings == nil {
		warnings = []warningJSON{}
	}
	body["warnings"] = warnings
	data, err := json.Marshal(body)
	if err != nil {
		http.Error(w, "fake slurmrestd: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// nodeJSON is slurm.Node as slurmrestd writes it: every field present,
// arrays as [] rather than null, numbers with no value as set:false objects.
type nodeJSON struct {
	Name            string            `json:"name"`
	Hostname        string            `json:"hostname"`
	Address         string            `json:"address"`
	State           []slurm.NodeState `json:"state"`
	Reason          string            `json:"reason"`
	ReasonSetByUser string            `json:"reason_set_by_user"`
	ReasonChangedAt slurm.NoVal       `json:"reason_changed_at"`
	Comment         string            `json:"comment"`
	CPUs            int32             `json:"cpus"`
	AllocCPUs       int32             `json:"alloc_cpus"`
	AllocIdleCPUs   int32             `json:"alloc_idle_cpus"`
	RealMemory      int64             `json:"real_memory"`
	AllocMemory     int64             `json:"alloc_memory"`
	Partitions      []string          `json:"partitions"`
	Features        []string          `json:"features"`
	ActiveFeatures  []string          `json:"active_features"`
	Topology        string            `json:"topology"`
}

func toNodeJSON(n slurm.Node) nodeJSON {
	return nodeJSON{
		Name: n.Name, Hostname: n.Hostname, Address: n.Address,
		State:  nonNil(n.State),
		Reason: n.Reason, ReasonSetByUser: n.ReasonSetByUser, ReasonChangedAt: n.ReasonChangedAt,
		Comment: n.Comment,
		CPUs:    n.CPUs, AllocCPUs: n.AllocCPUs, AllocIdleCPUs: n.AllocIdleCPUs,
		RealMemory: n.RealMemory, AllocMemory: n.AllocMemory,
		Partitions: nonNil(n.Partitions), Features: nonNil(n.Features), ActiveFeatures: nonNil(activeFeatures(n)),
		Topology: n.Topology,
	}
}

// jobJSON is slurm.Job as slurmrestd writes it.
type jobJSON struct {
	JobID     int64            `json:"job_id"`
	Name      string           `json:"name"`
	State     []slurm.JobState `json:"job_state"`
	UserName  string           `json:"user_name"`
	Partition string           `json:"partition"`
	Nodes     string           `json:"nodes"`
	Required  string           `json:"required_nodes"`
	StartTime slurm.NoVal      `json:"start_time"`
	EndTime   slurm.NoVal      `json:"end_time"`
	TimeLimit slurm.NoVal      `json:"time_limit"`
}

func toJobJSON(j slurm.Job) jobJSON {
	return jobJSON{
		JobID: j.JobID, Name: j.Name, State: nonNil(j.State), UserName: j.UserName,
		Partition: j.Partition, Nodes: j.Nodes, Required: j.RequiredNodes,
		StartTime: j.StartTime, EndTime: j.EndTime, TimeLimit: j.TimeLimit,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// activeFeatures are the node's active features: its available ones
// unless set apart, as slurmctld starts them.
func activeFeatures(n slurm.Node) []string {
	if n.ActiveFeatures != nil {
		return n.ActiveFeatures
	}
	return n.Features
}
