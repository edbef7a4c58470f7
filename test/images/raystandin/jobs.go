package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"
)

// Job statuses, as Ray's Jobs API spells them.
const (
	statusPending   = "PENDING"
	statusRunning   = "RUNNING"
	statusSucceeded = "SUCCEEDED"
	statusFailed    = "FAILED"
	statusStopped   = "STOPPED"
)

func terminal(status string) bool {
	return status == statusSucceeded || status == statusFailed || status == statusStopped
}

// jobDetails is the JobDetails JSON of GET /api/jobs/{id}. The fields
// KubeRay decodes are those of utiltypes.RayJobInfo (KubeRay
// ray-operator/controllers/ray/utils/types/dashboard_httpclient.go).
type jobDetails struct {
	Type                string             `json:"type"`
	JobID               *string            `json:"job_id"`
	SubmissionID        string             `json:"submission_id"`
	DriverInfo          any                `json:"driver_info"`
	Status              string             `json:"status"`
	Entrypoint          string             `json:"entrypoint"`
	Message             string             `json:"message"`
	ErrorType           *string            `json:"error_type"`
	StartTime           uint64             `json:"start_time"`
	EndTime             *uint64            `json:"end_time"`
	Metadata            map[string]string  `json:"metadata"`
	RuntimeEnv          map[string]any     `json:"runtime_env"`
	DriverExitCode      *int               `json:"driver_exit_code"`
	EntrypointNumCPUs   *float64           `json:"entrypoint_num_cpus"`
	EntrypointNumGPUs   *float64           `json:"entrypoint_num_gpus"`
	EntrypointMemory    *int64             `json:"entrypoint_memory"`
	EntrypointResources map[string]float64 `json:"entrypoint_resources"`
}

// submitRequest is the body of POST /api/jobs/ (KubeRay's
// utiltypes.RayJobRequest plus entrypoint_memory).
type submitRequest struct {
	Entrypoint          string             `json:"entrypoint"`
	SubmissionID        string             `json:"submission_id"`
	RuntimeEnv          map[string]any     `json:"runtime_env"`
	Metadata            map[string]string  `json:"metadata"`
	EntrypointNumCPUs   *float64           `json:"entrypoint_num_cpus"`
	EntrypointNumGPUs   *float64           `json:"entrypoint_num_gpus"`
	EntrypointMemory    *int64             `json:"entrypoint_memory"`
	EntrypointResources map[string]float64 `json:"entrypoint_resources"`
}

// httpError carries the status code the dashboard answers with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func notFound(id string) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf("Job %s does not exist", id)}
}

type job struct {
	details       jobDetails
	logs          *tailBuffer
	pid           int
	stopRequested bool
	done          chan struct{}
}

// jobManager runs submitted jobs as `/bin/sh -c <entrypoint>` processes,
// each in its own process group so that stop reaches its children.
type jobManager struct {
	mu         sync.Mutex
	jobs       map[string]*job // by submission ID
	byJobID    map[string]string
	order      []string
	nextJobID  int
	gcsAddress string
	log        *logger
	// stopGrace is how long a stopped job gets between SIGTERM and SIGKILL.
	stopGrace time.Duration
	closed    bool
}

func newJobManager(gcsAddress string, log *logger) *jobManager {
	return &jobManager{
		jobs:       map[string]*job{},
		byJobID:    map[string]string{},
		gcsAddress: gcsAddress,
		log:        log,
		stopGrace:  3 * time.Second,
	}
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func newSubmissionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return "raysubmit_" + string(b)
}

func nowMillis() uint64 { return uint64(time.Now().UnixMilli()) }

func (m *jobManager) submit(req submitRequest) (jobDetails, error) {
	if req.Entrypoint == "" {
		return jobDetails{}, &httpError{http.StatusBadRequest, "entrypoint is required"}
	}
	for _, f := range []*float64{req.EntrypointNumCPUs, req.EntrypointNumGPUs} {
		if f != nil && *f < 0 {
			return jobDetails{}, &httpError{http.StatusBadRequest, "entrypoint_num_cpus and entrypoint_num_gpus must not be negative"}
		}
	}
	if req.EntrypointMemory != nil && *req.EntrypointMemory < 0 {
		return jobDetails{}, &httpError{http.StatusBadRequest, "entrypoint_memory must not be negative"}
	}
	env, err := runtimeEnvVars(req.RuntimeEnv)
	if err != nil {
		return jobDetails{}, &httpError{http.StatusBadRequest, err.Error()}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return jobDetails{}, &httpError{http.StatusServiceUnavailable, "the node is shutting down"}
	}
	id := req.SubmissionID
	if id == "" {
		id = newSubmissionID()
	}
	if _, ok := m.jobs[id]; ok {
		// Ray answers 500 with this sentence; KubeRay matches on it.
		return jobDetails{}, &httpError{http.StatusInternalServerError,
			fmt.Sprintf("Job with submission_id %s already exists. Please use a different submission_id.", id)}
	}
	m.nextJobID++
	jobID := fmt.Sprintf("%02x000000", m.nextJobID)
	metadata := req.Metadata
	if metadata == nil {
		metadata = map[string]string{}
	}
	j := &job{
		details: jobDetails{
			Type:                "SUBMISSION",
			SubmissionID:        id,
			Status:              statusPending,
			Entrypoint:          req.Entrypoint,
			Message:             "Job has not started yet.",
			StartTime:           nowMillis(),
			Metadata:            metadata,
			RuntimeEnv:          req.RuntimeEnv,
			EntrypointNumCPUs:   req.EntrypointNumCPUs,
			EntrypointNumGPUs:   req.EntrypointNumGPUs,
			EntrypointMemory:    req.EntrypointMemory,
			EntrypointResources: req.EntrypointResources,
		},
		logs: newTailBuffer(8 << 20),
		done: make(chan struct{}),
	}
	m.jobs[id] = j
	m.order = append(m.order, id)

	cmd := exec.Command("/bin/sh", "-c", req.Entrypoint)
	cmd.Env = append(append(os.Environ(), env...), "RAY_ADDRESS="+m.gcsAddress)
	cmd.Stdout, cmd.Stderr = j.logs, j.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Children that keep the output pipe open do not hold the job.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		end := nowMillis()
		j.details.Status = statusFailed
		j.details.ErrorType = ptrTo("JOB_ENTRYPOINT_COMMAND_START_ERROR")
		j.details.Message = fmt.Sprintf("Failed to start the entrypoint: %v", err)
		j.details.EndTime = &end
		close(j.done)
		m.log.printf("job %s failed to start: %v", id, err)
		return j.details, nil
	}
	j.pid = cmd.Process.Pid
	j.details.JobID = &jobID
	m.byJobID[jobID] = id
	j.details.Status = statusRunning
	j.details.Message = "Job is currently running."
	m.log.printf("job %s started (pid %d): %s", id, j.pid, req.Entrypoint)
	go m.wait(j, cmd)
	return j.details, nil
}

func (m *jobManager) wait(j *job, cmd *exec.Cmd) {
	_ = cmd.Wait() // the exit status is read from ProcessState below
	state := cmd.ProcessState
	code := state.ExitCode()
	signalled := ""
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
		signalled = ws.Signal().String()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	end := nowMillis()
	d := &j.details
	d.EndTime = &end
	d.DriverExitCode = &code
	switch {
	case j.stopRequested:
		d.Status, d.Message = statusStopped, "Job was intentionally stopped."
	case code == 0:
		d.Status, d.Message = statusSucceeded, "Job finished successfully."
	default:
		d.Status = statusFailed
		d.ErrorType = ptrTo("JOB_ENTRYPOINT_COMMAND_ERROR")
		d.Message = fmt.Sprintf("Job entrypoint command failed with exit code %d", code)
		if signalled != "" {
			d.Message = fmt.Sprintf("Job entrypoint command was killed by signal %s (exit code %d)", signalled, code)
		}
	}
	close(j.done)
	m.log.printf("job %s ended: %s (exit code %d)", d.SubmissionID, d.Status, code)
}

func ptrTo[T any](v T) *T { return &v }

// lookup finds a job by submission ID or by job ID; m.mu must be held.
func (m *jobManager) lookup(id string) (*job, bool) {
	if j, ok := m.jobs[id]; ok {
		return j, true
	}
	if sid, ok := m.byJobID[id]; ok {
		j, ok := m.jobs[sid]
		return j, ok
	}
	return nil, false
}

func (m *jobManager) get(id string) (jobDetails, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.lookup(id)
	if !ok {
		return jobDetails{}, notFound(id)
	}
	return j.details, nil
}

func (m *jobManager) list() []jobDetails {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]jobDetails, 0, len(m.order))
	for _, id := range m.order {
		out = append(out, m.jobs[id].details)
	}
	return out
}

func (m *jobManager) logs(id string) (string, error) {
	m.mu.Lock()
	j, ok := m.lookup(id)
	m.mu.Unlock()
	if !ok {
		return "", notFound(id)
	}
	return j.logs.String(), nil
}

// stop sends SIGTERM to the job's process group and SIGKILL after
// stopGrace. It reports false for a job that has already ended.
func (m *jobManager) stop(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.lookup(id)
	if !ok {
		return false, notFound(id)
	}
	if terminal(j.details.Status) || j.pid == 0 {
		return false, nil
	}
	if !j.stopRequested {
		j.stopRequested = true
		_ = syscall.Kill(-j.pid, syscall.SIGTERM)
		go func(pid int, done <-chan struct{}, grace time.Duration) {
			select {
			case <-done:
			case <-time.After(grace):
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}(j.pid, j.done, m.stopGrace)
		m.log.printf("job %s: stop requested", j.details.SubmissionID)
	}
	return true, nil
}

// delete forgets a job that has ended.
func (m *jobManager) delete(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.lookup(id)
	if !ok {
		return notFound(id)
	}
	if !terminal(j.details.Status) {
		return &httpError{http.StatusBadRequest,
			fmt.Sprintf("Attempted to delete job %s, but it is in a non-terminal state %s.", id, j.details.Status)}
	}
	sid := j.details.SubmissionID
	delete(m.jobs, sid)
	if j.details.JobID != nil {
		delete(m.byJobID, *j.details.JobID)
	}
	for i, o := range m.order {
		if o == sid {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	return nil
}

// shutdown kills every running job's process group and waits briefly.
func (m *jobManager) shutdown() {
	m.mu.Lock()
	m.closed = true
	var running []*job
	for _, j := range m.jobs {
		if !terminal(j.details.Status) && j.pid != 0 {
			j.stopRequested = true
			_ = syscall.Kill(-j.pid, syscall.SIGKILL)
			running = append(running, j)
		}
	}
	m.mu.Unlock()
	for _, j := range running {
		select {
		case <-j.done:
		case <-time.After(5 * time.Second):
		}
	}
}

// runtimeEnvVars turns runtime_env.env_vars into KEY=value pairs, sorted.
// The rest of runtime_env (pip, working_dir, ...) is ignored.
func runtimeEnvVars(runtimeEnv map[string]any) ([]string, error) {
	raw, ok := runtimeEnv["env_vars"]
	if !ok || raw == nil {
		return nil, nil
	}
	vars, ok := raw.(map[string]any)
	if !ok {
		return nil, errors.New("runtime_env.env_vars must be an object of strings")
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("runtime_env.env_vars[%q] must be a string", k)
		}
		out = append(out, k+"="+s)
	}
	sort.Strings(out)
	return out, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max+b.max/4 {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) > b.max {
		return string(b.buf[len(b.buf)-b.max:])
	}
	return string(b.buf)
}
