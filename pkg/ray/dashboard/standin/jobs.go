package standin

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

	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

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
	details       dashboard.JobDetails
	logs          *tailBuffer
	pid           int
	stopRequested bool
	done          chan struct{}
	// stopSim ends a simulated job (closed by stop).
	stopSim chan struct{}
}

// Jobs runs submitted jobs as `/bin/sh -c <entrypoint>` processes, each in
// its own process group so that stop reaches its children.
type Jobs struct {
	mu         sync.Mutex
	jobs       map[string]*job // by submission ID
	byJobID    map[string]string
	order      []string
	nextJobID  int
	gcsAddress string
	logf       func(format string, args ...any)
	// stopGrace is how long a stopped job gets between SIGTERM and SIGKILL.
	stopGrace time.Duration
	closed    bool
	// plan, when set, simulates jobs instead of running them.
	plan Plan
}

// Plan says how a simulated job goes: RUNNING for runFor, then SUCCEEDED
// for exit code 0 and FAILED for any other.
type Plan func(req dashboard.JobRequest) (runFor time.Duration, exitCode int)

// NewSimulatedJobs runs nothing: every submitted job is RUNNING at once and
// ends as plan says, the way kwok's simulated kubelet runs a Pod's
// containers. It is the dashboard of heads that run on simulated nodes,
// where an entrypoint has nowhere to run (and must not run on the machine
// that simulates them).
func NewSimulatedJobs(plan Plan, logf func(format string, args ...any)) *Jobs {
	m := NewJobs("", logf)
	m.plan = plan
	return m
}

// NewJobs runs jobs with RAY_ADDRESS=gcsAddress and reports what they do
// through logf (nil: nowhere).
func NewJobs(gcsAddress string, logf func(format string, args ...any)) *Jobs {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Jobs{
		jobs:       map[string]*job{},
		byJobID:    map[string]string{},
		gcsAddress: gcsAddress,
		logf:       logf,
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

func (m *Jobs) submit(req dashboard.JobRequest) (dashboard.JobDetails, error) {
	if req.Entrypoint == "" {
		return dashboard.JobDetails{}, &httpError{http.StatusBadRequest, "entrypoint is required"}
	}
	for _, f := range []*float64{req.EntrypointNumCPUs, req.EntrypointNumGPUs} {
		if f != nil && *f < 0 {
			return dashboard.JobDetails{}, &httpError{http.StatusBadRequest, "entrypoint_num_cpus and entrypoint_num_gpus must not be negative"}
		}
	}
	if req.EntrypointMemory != nil && *req.EntrypointMemory < 0 {
		return dashboard.JobDetails{}, &httpError{http.StatusBadRequest, "entrypoint_memory must not be negative"}
	}
	env, err := runtimeEnvVars(req.RuntimeEnv)
	if err != nil {
		return dashboard.JobDetails{}, &httpError{http.StatusBadRequest, err.Error()}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return dashboard.JobDetails{}, &httpError{http.StatusServiceUnavailable, "the node is shutting down"}
	}
	id := req.SubmissionID
	if id == "" {
		id = newSubmissionID()
	}
	if _, ok := m.jobs[id]; ok {
		// Ray answers 500 with this sentence; KubeRay matches on it.
		return dashboard.JobDetails{}, &httpError{http.StatusInternalServerError,
			fmt.Sprintf("Job with submission_id %s already exists. Please use a different submission_id.", id)}
	}
	metadata := req.Metadata
	if metadata == nil {
		metadata = map[string]string{}
	}
	j := &job{
		details: dashboard.JobDetails{
			Type:                "SUBMISSION",
			SubmissionID:        id,
			Status:              dashboard.JobPending,
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

	if m.plan != nil {
		runFor, code := m.plan(req)
		m.nextJobIDFor(j)
		j.stopSim = make(chan struct{})
		j.details.Status = dashboard.JobRunning
		j.details.Message = "Job is currently running."
		fmt.Fprintf(j.logs, "simulated job: the entrypoint is not run; it ends in %v with exit code %d\n", runFor, code)
		m.logf("job %s simulated (%v, exit code %d): %s", id, runFor, code, req.Entrypoint)
		go m.simulate(j, runFor, code)
		return j.details, nil
	}

	cmd := exec.Command("/bin/sh", "-c", req.Entrypoint)
	cmd.Env = append(append(os.Environ(), env...), "RAY_ADDRESS="+m.gcsAddress)
	cmd.Stdout, cmd.Stderr = j.logs, j.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Children that keep the output pipe open do not hold the job.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		end := nowMillis()
		j.details.Status = dashboard.JobFailed
		j.details.ErrorType = ptrTo("JOB_ENTRYPOINT_COMMAND_START_ERROR")
		j.details.Message = fmt.Sprintf("Failed to start the entrypoint: %v", err)
		j.details.EndTime = &end
		close(j.done)
		m.logf("job %s failed to start: %v", id, err)
		return j.details, nil
	}
	j.pid = cmd.Process.Pid
	m.nextJobIDFor(j)
	j.details.Status = dashboard.JobRunning
	j.details.Message = "Job is currently running."
	m.logf("job %s started (pid %d): %s", id, j.pid, req.Entrypoint)
	go m.wait(j, cmd)
	return j.details, nil
}

// nextJobIDFor gives a started job its Ray job ID; m.mu must be held.
func (m *Jobs) nextJobIDFor(j *job) {
	m.nextJobID++
	jobID := fmt.Sprintf("%02x000000", m.nextJobID)
	j.details.JobID = &jobID
	m.byJobID[jobID] = j.details.SubmissionID
}

// simulate ends a simulated job after runFor, or when it is stopped.
func (m *Jobs) simulate(j *job, runFor time.Duration, code int) {
	timer := time.NewTimer(runFor)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-j.stopSim:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended(j, code, "")
}

func (m *Jobs) wait(j *job, cmd *exec.Cmd) {
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
	m.ended(j, code, signalled)
}

// ended records how a job ended; m.mu must be held.
func (m *Jobs) ended(j *job, code int, signalled string) {
	end := nowMillis()
	d := &j.details
	d.EndTime = &end
	d.DriverExitCode = &code
	switch {
	case j.stopRequested:
		d.Status, d.Message = dashboard.JobStopped, "Job was intentionally stopped."
	case code == 0:
		d.Status, d.Message = dashboard.JobSucceeded, "Job finished successfully."
	default:
		d.Status = dashboard.JobFailed
		d.ErrorType = ptrTo("JOB_ENTRYPOINT_COMMAND_ERROR")
		d.Message = fmt.Sprintf("Job entrypoint command failed with exit code %d", code)
		if signalled != "" {
			d.Message = fmt.Sprintf("Job entrypoint command was killed by signal %s (exit code %d)", signalled, code)
		}
	}
	close(j.done)
	m.logf("job %s ended: %s (exit code %d)", d.SubmissionID, d.Status, code)
}

func ptrTo[T any](v T) *T { return &v }

// lookup finds a job by submission ID or by job ID; m.mu must be held.
func (m *Jobs) lookup(id string) (*job, bool) {
	if j, ok := m.jobs[id]; ok {
		return j, true
	}
	if sid, ok := m.byJobID[id]; ok {
		j, ok := m.jobs[sid]
		return j, ok
	}
	return nil, false
}

func (m *Jobs) get(id string) (dashboard.JobDetails, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.lookup(id)
	if !ok {
		return dashboard.JobDetails{}, notFound(id)
	}
	return j.details, nil
}

func (m *Jobs) list() []dashboard.JobDetails {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]dashboard.JobDetails, 0, len(m.order))
	for _, id := range m.order {
		out = append(out, m.jobs[id].details)
	}
	return out
}

func (m *Jobs) logs(id string) (string, error) {
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
func (m *Jobs) stop(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.lookup(id)
	if !ok {
		return false, notFound(id)
	}
	if j.details.Status.IsTerminal() {
		return false, nil
	}
	if j.stopSim != nil {
		if !j.stopRequested {
			j.stopRequested = true
			close(j.stopSim)
			m.logf("job %s: stop requested", j.details.SubmissionID)
		}
		return true, nil
	}
	if j.pid == 0 {
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
		m.logf("job %s: stop requested", j.details.SubmissionID)
	}
	return true, nil
}

// delete forgets a job that has ended.
func (m *Jobs) delete(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.lookup(id)
	if !ok {
		return notFound(id)
	}
	if !j.details.Status.IsTerminal() {
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

// Shutdown kills every running job's process group and waits briefly.
func (m *Jobs) Shutdown() {
	m.mu.Lock()
	m.closed = true
	var running []*job
	for _, j := range m.jobs {
		if !j.details.Status.IsTerminal() && j.stopSim != nil && !j.stopRequested {
			j.stopRequested = true
			close(j.stopSim)
			running = append(running, j)
		}
		if !j.details.Status.IsTerminal() && j.pid != 0 {
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
