package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// jobPollInterval is how often `ray job submit` and `ray job logs --follow`
// poll the dashboard.
var jobPollInterval = 500 * time.Millisecond

// jobSpec has every flag KubeRay's BuildJobSubmitCommand passes
// (ray-operator/controllers/ray/common/job.go) and the other common ones.
var jobSpec = flagSpec{
	values: set("address", "submission-id", "job-id", "runtime-env-json", "runtime-env", "metadata-json",
		"entrypoint-num-cpus", "entrypoint-num-gpus", "entrypoint-memory", "entrypoint-resources",
		"entrypoint-label-selector", "working-dir", "headers", "verify", "log-style", "log-color"),
	bools:   set("no-wait", "follow", "verbose"),
	aliases: map[string]string{"f": "follow", "v": "verbose"},
}

var errJobNotFound = errors.New("job does not exist")

func runJob(args []string, stdout io.Writer, out, errl *logger) int {
	if len(args) == 0 {
		errl.printf("usage: ray job <submit|status|logs|stop|list|delete> [--address URL] ...")
		return 2
	}
	sub := args[0]
	spec := jobSpec
	spec.stopAtPositional = sub == "submit"
	p, err := parseFlags(args[1:], spec)
	if err != nil {
		errl.printf("ray job %s: %v", sub, err)
		return 2
	}
	if len(p.unknown) > 0 {
		errl.printf("ray job %s: accepted and ignored: %s", sub, strings.Join(p.unknown, " "))
	}
	var id string
	switch sub {
	case "submit", "list":
	case "status", "logs", "stop", "delete":
		ids := append(p.positional, p.afterDashDash...)
		if len(ids) != 1 {
			errl.printf("ray job %s: want exactly one job ID, got %q", sub, ids)
			return 2
		}
		id = ids[0]
	default:
		errl.printf("ray stand-in: job %s is not supported", sub)
		return 2
	}
	c, err := newJobClient(p.values["address"])
	if err != nil {
		errl.printf("ray job %s: %v", sub, err)
		return 1
	}
	switch sub {
	case "submit":
		return c.cmdSubmit(p, stdout, out, errl)
	case "list":
		jobs, err := c.list()
		if err != nil {
			errl.printf("ray job list: %v", err)
			return 1
		}
		b, _ := json.MarshalIndent(jobs, "", "  ")
		out.printf("%s", b)
		return 0
	case "status":
		info, err := c.info(id)
		if err != nil {
			errl.printf("ray job status: %v", err)
			return 1
		}
		out.printf("Status for job '%s': %s", id, info.Status)
		out.printf("Status message: %s", info.Message)
		return 0
	case "logs":
		if p.bools["follow"] {
			if _, err := c.follow(id, stdout); err != nil {
				errl.printf("ray job logs: %v", err)
				return 1
			}
			return 0
		}
		logs, err := c.logs(id)
		if err != nil {
			errl.printf("ray job logs: %v", err)
			return 1
		}
		_, _ = io.WriteString(stdout, logs)
		return 0
	case "stop":
		return c.cmdStop(id, p.bools["no-wait"], out, errl)
	default: // delete
		if err := c.delete(id); err != nil {
			errl.printf("ray job delete: %v", err)
			return 1
		}
		out.printf("Job '%s' deleted successfully", id)
		return 0
	}
}

func (c *jobClient) cmdSubmit(p *parsedFlags, stdout io.Writer, out, errl *logger) int {
	entry := p.positional
	if p.dashDash {
		entry = append(entry, p.afterDashDash...)
	}
	if len(entry) == 0 {
		errl.printf("ray job submit: no entrypoint given (put it after --)")
		return 2
	}
	req, err := submitRequestFromFlags(p, entry)
	if err != nil {
		errl.printf("ray job submit: %v", err)
		return 2
	}
	if _, ok := p.values["working-dir"]; ok {
		errl.printf("ray job submit: --working-dir is ignored: the stand-in uploads nothing")
	}
	id, err := c.submit(req)
	if err != nil {
		errl.printf("ray job submit: %v", err)
		return 1
	}
	out.printf("Job '%s' submitted successfully", id)
	if p.bools["no-wait"] {
		out.printf("Query its status with `ray job status %s` and its logs with `ray job logs %s`", id, id)
		return 0
	}
	out.printf("Tailing logs until the job exits (disable with --no-wait):")
	info, err := c.follow(id, stdout)
	if err != nil {
		errl.printf("ray job submit: %v", err)
		return 1
	}
	switch info.Status {
	case dashboard.JobSucceeded:
		out.printf("Job '%s' succeeded", id)
		return 0
	case dashboard.JobStopped:
		out.printf("Job '%s' was stopped", id)
	default:
		out.printf("Job '%s' failed: %s", id, info.Message)
	}
	return 1
}

func submitRequestFromFlags(p *parsedFlags, entry []string) (dashboard.JobRequest, error) {
	req := dashboard.JobRequest{Entrypoint: entrypointFromArgs(entry), SubmissionID: p.values["submission-id"]}
	if req.SubmissionID == "" {
		req.SubmissionID = p.values["job-id"]
	}
	if v, ok := p.values["runtime-env-json"]; ok {
		if err := json.Unmarshal([]byte(v), &req.RuntimeEnv); err != nil {
			return req, fmt.Errorf("--runtime-env-json %q is not a JSON object: %w", v, err)
		}
	} else if path, ok := p.values["runtime-env"]; ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return req, err
		}
		if err := json.Unmarshal(b, &req.RuntimeEnv); err != nil {
			return req, fmt.Errorf("--runtime-env %s: the stand-in reads only JSON runtime env files: %w", path, err)
		}
	}
	if v, ok := p.values["metadata-json"]; ok {
		if err := json.Unmarshal([]byte(v), &req.Metadata); err != nil {
			return req, fmt.Errorf("--metadata-json %q is not a JSON object of strings: %w", v, err)
		}
	}
	for _, f := range []struct {
		flag string
		dst  **float64
	}{{"entrypoint-num-cpus", &req.EntrypointNumCPUs}, {"entrypoint-num-gpus", &req.EntrypointNumGPUs}} {
		if v, ok := p.values[f.flag]; ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return req, fmt.Errorf("--%s %q is not a number", f.flag, v)
			}
			*f.dst = &n
		}
	}
	if v, ok := p.values["entrypoint-memory"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return req, fmt.Errorf("--entrypoint-memory %q is not a whole number of bytes", v)
		}
		req.EntrypointMemory = &n
	}
	if v, ok := p.values["entrypoint-resources"]; ok {
		if err := json.Unmarshal([]byte(v), &req.EntrypointResources); err != nil {
			return req, fmt.Errorf("--entrypoint-resources %q is not a JSON object of numbers: %w", v, err)
		}
	}
	return req, nil
}

// entrypointFromArgs makes the shell command the job runs. One argument is
// taken as the command itself; several are shell-quoted and joined, so that
// `-- python -c "print('a b')"` runs what the user typed.
func entrypointFromArgs(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

func shellQuote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (c *jobClient) cmdStop(id string, noWait bool, out, errl *logger) int {
	stopped, err := c.stop(id)
	if err != nil {
		errl.printf("ray job stop: %v", err)
		return 1
	}
	if !stopped {
		info, err := c.info(id)
		if err == nil {
			out.printf("Job '%s' has already ended: %s", id, info.Status)
		}
		return 0
	}
	out.printf("Stop requested for job '%s'", id)
	if noWait {
		return 0
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		info, err := c.info(id)
		if err != nil {
			errl.printf("ray job stop: %v", err)
			return 1
		}
		if info.Status.IsTerminal() {
			out.printf("Job '%s' is %s", id, info.Status)
			return 0
		}
		time.Sleep(jobPollInterval)
	}
	errl.printf("ray job stop: job %s has not ended within a minute", id)
	return 1
}

// jobClient talks to the dashboard's Jobs API.
type jobClient struct {
	base  string
	hc    *http.Client
	token string
}

// newJobClient takes --address, else RAY_ADDRESS, else the local dashboard.
// An http(s) URL is the dashboard; anything else is a GCS address, which is
// asked for the dashboard's URL.
func newJobClient(address string) (*jobClient, error) {
	if address == "" {
		address = os.Getenv("RAY_ADDRESS")
	}
	if address == "" || address == "auto" {
		address = fmt.Sprintf("http://127.0.0.1:%d", defaultDashboardPort)
	}
	c := &jobClient{hc: &http.Client{Timeout: 10 * time.Second}, token: os.Getenv("RAY_AUTH_TOKEN")}
	if strings.HasPrefix(address, "http://") || strings.HasPrefix(address, "https://") {
		c.base = strings.TrimRight(address, "/")
		return c, nil
	}
	hostPort := gcsHostPort(address)
	lookup := &http.Client{Timeout: healthCheckBudget}
	resp, err := lookup.Get("http://" + hostPort + gcsDashboardPath)
	if err != nil {
		return nil, fmt.Errorf("%s is not an http:// dashboard address and no GCS answers there: %w", address, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GCS at %s did not give the dashboard address: %s %s", hostPort, resp.Status, strings.TrimSpace(string(b)))
	}
	c.base = strings.TrimSpace(string(b))
	return c, nil
}

func (c *jobClient) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("x-ray-authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("dashboard at %s is not reachable: %w", c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func unexpected(code int, body []byte) error {
	return fmt.Errorf("dashboard answered %d %s: %s", code, http.StatusText(code), strings.TrimSpace(string(body)))
}

func jobPath(id string) string { return "/api/jobs/" + url.PathEscape(id) }

func (c *jobClient) submit(req dashboard.JobRequest) (string, error) {
	code, body, err := c.do(http.MethodPost, "/api/jobs/", req)
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", unexpected(code, body)
	}
	var resp struct {
		SubmissionID string `json:"submission_id"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || resp.SubmissionID == "" {
		return "", fmt.Errorf("unexpected submit reply %q", body)
	}
	return resp.SubmissionID, nil
}

func (c *jobClient) info(id string) (dashboard.JobDetails, error) {
	code, body, err := c.do(http.MethodGet, jobPath(id), nil)
	if err != nil {
		return dashboard.JobDetails{}, err
	}
	if code == http.StatusNotFound {
		return dashboard.JobDetails{}, fmt.Errorf("%w: %s", errJobNotFound, id)
	}
	if code != http.StatusOK {
		return dashboard.JobDetails{}, unexpected(code, body)
	}
	var d dashboard.JobDetails
	if err := json.Unmarshal(body, &d); err != nil {
		return dashboard.JobDetails{}, fmt.Errorf("unexpected job details %q: %w", body, err)
	}
	return d, nil
}

func (c *jobClient) logs(id string) (string, error) {
	code, body, err := c.do(http.MethodGet, jobPath(id)+"/logs", nil)
	if err != nil {
		return "", err
	}
	if code == http.StatusNotFound {
		return "", fmt.Errorf("%w: %s", errJobNotFound, id)
	}
	if code != http.StatusOK {
		return "", unexpected(code, body)
	}
	var resp struct {
		Logs string `json:"logs"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return "", fmt.Errorf("unexpected logs reply %q: %w", body, err)
	}
	return resp.Logs, nil
}

func (c *jobClient) stop(id string) (bool, error) {
	code, body, err := c.do(http.MethodPost, jobPath(id)+"/stop", nil)
	if err != nil {
		return false, err
	}
	if code == http.StatusNotFound {
		return false, fmt.Errorf("%w: %s", errJobNotFound, id)
	}
	if code != http.StatusOK {
		return false, unexpected(code, body)
	}
	var resp struct {
		Stopped bool `json:"stopped"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return false, fmt.Errorf("unexpected stop reply %q: %w", body, err)
	}
	return resp.Stopped, nil
}

func (c *jobClient) delete(id string) error {
	code, body, err := c.do(http.MethodDelete, jobPath(id), nil)
	if err != nil {
		return err
	}
	if code == http.StatusNotFound {
		return fmt.Errorf("%w: %s", errJobNotFound, id)
	}
	if code != http.StatusOK {
		return unexpected(code, body)
	}
	return nil
}

func (c *jobClient) list() ([]dashboard.JobDetails, error) {
	code, body, err := c.do(http.MethodGet, "/api/jobs/", nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, unexpected(code, body)
	}
	var jobs []dashboard.JobDetails
	if err := json.Unmarshal(body, &jobs); err != nil {
		return nil, fmt.Errorf("unexpected job list %q: %w", body, err)
	}
	return jobs, nil
}

// follow prints the job's output to w as it grows until the job ends, and
// returns its final details.
func (c *jobClient) follow(id string, w io.Writer) (dashboard.JobDetails, error) {
	printed := ""
	for {
		info, err := c.info(id)
		if err != nil {
			return dashboard.JobDetails{}, err
		}
		// Read after the status: once the job is terminal its logs are
		// complete.
		logs, err := c.logs(id)
		if err != nil {
			return dashboard.JobDetails{}, err
		}
		if strings.HasPrefix(logs, printed) {
			_, _ = io.WriteString(w, logs[len(printed):])
		} else {
			_, _ = io.WriteString(w, logs)
		}
		printed = logs
		if info.Status.IsTerminal() {
			if printed != "" && !strings.HasSuffix(printed, "\n") {
				_, _ = io.WriteString(w, "\n")
			}
			return info, nil
		}
		time.Sleep(jobPollInterval)
	}
}
