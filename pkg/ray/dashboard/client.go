package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Paths of Ray's dashboard API, as KubeRay's dashboard client calls them.
const (
	JobsPath  = "/api/jobs/"
	ServePath = "/api/serve/applications/"
)

// DefaultTimeout bounds one request: KubeRay's RayHTTPClientDirectTimeoutSeconds
// for requests sent straight to the head's Service or Pod.
const DefaultTimeout = 2 * time.Second

// DefaultRetries is how many times a request that may be repeated safely is
// tried again after a connection error or a 502, 503 or 504.
const DefaultRetries = 2

// DefaultBackoff is the wait before the first retry; it doubles after each.
const DefaultBackoff = 200 * time.Millisecond

// maxReply bounds how much of a reply is read (job logs are the largest).
const maxReply = 64 << 20

// Config is how to reach one Ray head's dashboard.
type Config struct {
	// URL is the dashboard's base URL, e.g.
	// http://rc-head-svc.ns.svc.cluster.local:8265, or a proxy URL that
	// ends where the dashboard's paths begin.
	URL string
	// AuthToken, when set, is sent as "x-ray-authorization: Bearer <token>"
	// (a cluster with authOptions.mode token).
	AuthToken string
	// HTTPClient sends the requests; nil means one with DefaultTimeout.
	HTTPClient *http.Client
	// Retries and Backoff: see DefaultRetries and DefaultBackoff; a
	// negative Retries turns retrying off.
	Retries int
	Backoff time.Duration
}

// Client calls one Ray head's dashboard: the Jobs API and the Serve API.
// It is safe for concurrent use.
type Client struct {
	base    string
	token   string
	http    *http.Client
	retries int
	backoff time.Duration
}

// New returns a client for the dashboard cfg names.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("ray dashboard URL %q: want http(s)://host[:port][/path]", cfg.URL)
	}
	c := &Client{base: strings.TrimSuffix(cfg.URL, "/"), token: cfg.AuthToken, http: cfg.HTTPClient,
		retries: cfg.Retries, backoff: cfg.Backoff}
	if c.http == nil {
		c.http = &http.Client{Timeout: DefaultTimeout}
	}
	if c.retries == 0 {
		c.retries = DefaultRetries
	}
	if c.retries < 0 {
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = DefaultBackoff
	}
	return c, nil
}

// URL is the dashboard's base URL.
func (c *Client) URL() string { return c.base }

// APIError is a reply outside 2xx.
type APIError struct {
	Method, Path string
	StatusCode   int
	Body         string
}

func (e *APIError) Error() string {
	body := strings.TrimSpace(e.Body)
	if len(body) > 512 {
		body = body[:512] + "…"
	}
	return fmt.Sprintf("ray dashboard %s %s: %d %s: %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode), body)
}

// IsNotFound reports whether err is the dashboard's 404, as for a job it
// does not know.
func IsNotFound(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound
}

// ErrSubmissionIDInUse is returned (wrapped) by SubmitJob when the
// dashboard already has a job with the request's submission ID: Ray answers
// 500 with "Please use a different submission_id", and KubeRay treats the
// job as submitted. SubmitJob still returns the ID.
var ErrSubmissionIDInUse = errors.New("the submission ID is already in use")

// SubmitJob submits req and returns its submission ID. A request with a
// submission ID is retried (a repeat finds the ID in use); one without is
// sent once, since a repeat could start the job twice.
func (c *Client) SubmitJob(ctx context.Context, req JobRequest) (string, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("encoding the job request: %w", err)
	}
	reply, err := c.do(ctx, http.MethodPost, JobsPath, body, req.SubmissionID != "")
	if err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusInternalServerError &&
			strings.Contains(apiErr.Body, "Please use a different submission_id") {
			return req.SubmissionID, fmt.Errorf("job %s: %w", req.SubmissionID, ErrSubmissionIDInUse)
		}
		return "", err
	}
	var out struct {
		SubmissionID string `json:"submission_id"`
		JobID        string `json:"job_id"`
	}
	if err := json.Unmarshal(reply, &out); err != nil {
		return "", fmt.Errorf("ray dashboard POST %s: unexpected reply %q: %w", JobsPath, reply, err)
	}
	if out.SubmissionID != "" {
		return out.SubmissionID, nil
	}
	return out.JobID, nil
}

// JobInfo returns the job with submission (or job) ID id; IsNotFound holds
// for a job the dashboard does not know.
func (c *Client) JobInfo(ctx context.Context, id string) (*JobDetails, error) {
	reply, err := c.do(ctx, http.MethodGet, JobsPath+url.PathEscape(id), nil, true)
	if err != nil {
		return nil, err
	}
	var d JobDetails
	if err := json.Unmarshal(reply, &d); err != nil {
		return nil, fmt.Errorf("ray dashboard GET %s%s: unexpected reply %q: %w", JobsPath, id, reply, err)
	}
	return &d, nil
}

// ListJobs returns every job the dashboard knows.
func (c *Client) ListJobs(ctx context.Context) ([]JobDetails, error) {
	reply, err := c.do(ctx, http.MethodGet, JobsPath, nil, true)
	if err != nil {
		return nil, err
	}
	var jobs []JobDetails
	if err := json.Unmarshal(reply, &jobs); err != nil {
		return nil, fmt.Errorf("ray dashboard GET %s: unexpected reply: %w", JobsPath, err)
	}
	return jobs, nil
}

// JobLogs returns what the job's driver has written.
func (c *Client) JobLogs(ctx context.Context, id string) (string, error) {
	reply, err := c.do(ctx, http.MethodGet, JobsPath+url.PathEscape(id)+"/logs", nil, true)
	if err != nil {
		return "", err
	}
	var out struct {
		Logs string `json:"logs"`
	}
	if err := json.Unmarshal(reply, &out); err != nil {
		return "", fmt.Errorf("ray dashboard GET %s%s/logs: unexpected reply: %w", JobsPath, id, err)
	}
	return out.Logs, nil
}

// StopJob asks the dashboard to stop the job. A job that had already ended
// is not an error, as in KubeRay; one the dashboard would not stop and that
// is still running is.
func (c *Client) StopJob(ctx context.Context, id string) error {
	reply, err := c.do(ctx, http.MethodPost, JobsPath+url.PathEscape(id)+"/stop", nil, true)
	if err != nil {
		return err
	}
	var out struct {
		Stopped bool `json:"stopped"`
	}
	if err := json.Unmarshal(reply, &out); err != nil {
		return fmt.Errorf("ray dashboard POST %s%s/stop: unexpected reply %q: %w", JobsPath, id, reply, err)
	}
	if out.Stopped {
		return nil
	}
	info, err := c.JobInfo(ctx, id)
	if err != nil {
		return err
	}
	if !info.Status.IsTerminal() {
		return fmt.Errorf("ray job %s was not stopped and is %s", id, info.Status)
	}
	return nil
}

// DeleteJob deletes an ended job's record; a job the dashboard does not
// know is already deleted.
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, JobsPath+url.PathEscape(id), nil, true)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// ServeDetails returns the Serve applications deployed declaratively and
// their deployments' statuses.
func (c *Client) ServeDetails(ctx context.Context) (*ServeDetails, error) {
	reply, err := c.do(ctx, http.MethodGet, ServePath+"?api_type=declarative", nil, true)
	if err != nil {
		return nil, err
	}
	var d ServeDetails
	if err := json.Unmarshal(reply, &d); err != nil {
		return nil, fmt.Errorf("ray dashboard GET %s: unexpected reply: %w", ServePath, err)
	}
	return &d, nil
}

// UpdateServeApplications deploys config, a Serve config (serveConfigV2)
// as JSON, replacing the applications deployed before.
func (c *Client) UpdateServeApplications(ctx context.Context, config []byte) error {
	if !json.Valid(config) {
		return errors.New("the Serve config is not JSON")
	}
	_, err := c.do(ctx, http.MethodPut, ServePath, config, true)
	return err
}

// do sends one request, retried when idempotent after a connection error or
// a 502, 503 or 504, and returns the reply's body when it is 2xx.
func (c *Client) do(ctx context.Context, method, path string, body []byte, idempotent bool) ([]byte, error) {
	wait := c.backoff
	for attempt := 0; ; attempt++ {
		reply, err := c.once(ctx, method, path, body)
		if err == nil || !idempotent || attempt >= c.retries || !retriable(err) || ctx.Err() != nil {
			return reply, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait *= 2
	}
}

func (c *Client) once(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("x-ray-authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ray dashboard %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return nil, fmt.Errorf("ray dashboard %s %s: reading the reply: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, Body: string(reply)}
	}
	return reply, nil
}

// retriable: the request may not have reached Ray, or Ray (or a proxy in
// front of it) was briefly unavailable.
func retriable(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		switch apiErr.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return true
}
