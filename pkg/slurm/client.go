package slurm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// APIVersion is the slurmrestd data parser version the client speaks;
// Slurm 24.11 through 26.05 serve it.
const APIVersion = "v0.0.44"

// Headers slurmrestd's rest_auth/jwt plugin reads.
const (
	HeaderUserName  = "X-SLURM-USER-NAME"
	HeaderUserToken = "X-SLURM-USER-TOKEN"
)

// DefaultUserName is SlurmUser in the images the operator deploys; as
// SlurmUser it may drain and resume nodes without accounting configured.
const DefaultUserName = "slurm"

// DefaultRequestTimeout bounds a call whose context has no deadline, so a
// hung slurmrestd cannot stall a reconcile forever.
const DefaultRequestTimeout = 30 * time.Second

// maxResponseBytes bounds what is read from slurmrestd; a node list of a
// large cluster is a few MiB.
const maxResponseBytes = 64 << 20

// Client is what the Slurm controllers need from slurmrestd.
type Client interface {
	// Ping succeeds when slurmrestd answers and a slurmctld responds.
	Ping(ctx context.Context) error
	ListNodes(ctx context.Context) ([]Node, error)
	// GetNode returns an error for which IsNotFound is true when Slurm does
	// not know the node.
	GetNode(ctx context.Context, name string) (*Node, error)
	UpdateNode(ctx context.Context, name string, update NodeUpdate) error
	// DeleteNode deletes a node record (scontrol delete nodename=...).
	// slurmctld refuses to delete a node that runs a job.
	DeleteNode(ctx context.Context, name string) error
	ListJobs(ctx context.Context) ([]Job, error)
}

// Config says how to reach and authenticate to one slurmrestd.
type Config struct {
	// URL is slurmrestd's base URL, e.g. http://slurm-restapi.slurm:6820.
	URL string
	// UserName goes in the token's "sun" claim and X-SLURM-USER-NAME;
	// DefaultUserName when empty.
	UserName string
	// JWTKey is the HS256 key slurmctld verifies tokens with.
	JWTKey []byte

	// The fields below tune behaviour and are not part of Fingerprint.

	// TokenLifetime defaults to DefaultTokenLifetime.
	TokenLifetime time.Duration
	// RequestTimeout defaults to DefaultRequestTimeout.
	RequestTimeout time.Duration
	// HTTPClient defaults to a client with its own connection pool.
	HTTPClient *http.Client
	// Now defaults to time.Now; tests replace it.
	Now func() time.Time
	// Observer, when set, is told about every request: for metrics.
	Observer Observer
}

// Observer learns how each request went: operation is the method and the
// endpoint's first segment ("GET nodes", "POST node"), code the HTTP status
// (0 when no answer came), err what the call returned.
type Observer func(operation string, code int, elapsed time.Duration, err error)

func (c Config) userName() string {
	if c.UserName == "" {
		return DefaultUserName
	}
	return c.UserName
}

// Fingerprint identifies the server and credentials; two configs with the
// same fingerprint talk to the same slurmrestd as the same user with the
// same key. The key enters only as a hash so the fingerprint can be logged.
func (c Config) Fingerprint() string {
	keyHash := sha256.Sum256(c.JWTKey)
	return strings.TrimRight(c.URL, "/") + "|" + c.userName() + "|" + hex.EncodeToString(keyHash[:8])
}

// httpClient is the net/http implementation of Client.
type httpClient struct {
	baseURL  *url.URL
	tokens   *TokenSource
	http     *http.Client
	timeout  time.Duration
	observer Observer
	now      func() time.Time
}

// NewClient returns a Client for cfg. It does not contact the server.
func NewClient(cfg Config) (Client, error) {
	if cfg.URL == "" {
		return nil, errors.New("slurm: empty slurmrestd URL")
	}
	base, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil {
		return nil, fmt.Errorf("slurm: slurmrestd URL: %w", err)
	}
	if base.Scheme != "http" && base.Scheme != "https" {
		return nil, fmt.Errorf("slurm: slurmrestd URL %q: scheme must be http or https", cfg.URL)
	}
	opts := []TokenSourceOption{}
	if cfg.TokenLifetime > 0 {
		opts = append(opts, WithTokenLifetime(cfg.TokenLifetime))
	}
	if cfg.Now != nil {
		opts = append(opts, WithClock(cfg.Now))
	}
	tokens, err := NewTokenSource(cfg.JWTKey, cfg.userName(), opts...)
	if err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		// A pool per client lets the registry drop a replaced client's idle
		// connections without touching other clusters'.
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &httpClient{baseURL: base, tokens: tokens, http: hc, timeout: timeout, observer: cfg.Observer, now: now}, nil
}

// CloseIdleConnections lets the registry release a replaced client's
// connections.
func (c *httpClient) CloseIdleConnections() { c.http.CloseIdleConnections() }

// response is the envelope every v0.0.44 answer shares.
type response struct {
	Errors   []ErrorEntry `json:"errors"`
	Warnings []struct {
		Description string `json:"description"`
		Source      string `json:"source"`
	} `json:"warnings"`
}

type pingResponse struct {
	response
	Pings []struct {
		Hostname   string `json:"hostname"`
		Pinged     string `json:"pinged"`
		Responding bool   `json:"responding"`
		Mode       string `json:"mode"`
	} `json:"pings"`
}

type nodesResponse struct {
	response
	Nodes []Node `json:"nodes"`
}

type jobsResponse struct {
	response
	Jobs []Job `json:"jobs"`
}

func (c *httpClient) Ping(ctx context.Context) error {
	var resp pingResponse
	if err := c.do(ctx, http.MethodGet, "ping", nil, &resp); err != nil {
		return err
	}
	var states []string
	for _, p := range resp.Pings {
		if p.Responding {
			return nil
		}
		states = append(states, fmt.Sprintf("%s %s", p.Hostname, p.Pinged))
	}
	if len(states) == 0 {
		return errors.New("slurm: ping: slurmrestd reported no slurmctld")
	}
	return fmt.Errorf("slurm: ping: no slurmctld responding (%s)", strings.Join(states, ", "))
}

func (c *httpClient) ListNodes(ctx context.Context) ([]Node, error) {
	var resp nodesResponse
	if err := c.do(ctx, http.MethodGet, "nodes", nil, &resp); err != nil {
		return nil, err
	}
	return resp.Nodes, nil
}

func (c *httpClient) GetNode(ctx context.Context, name string) (*Node, error) {
	if name == "" {
		return nil, errors.New("slurm: empty node name")
	}
	var resp nodesResponse
	err := c.do(ctx, http.MethodGet, "node/"+url.PathEscape(name), nil, &resp)
	var apiErr *APIError
	// For an unknown node slurmrestd answers 200 with "Failure to query node
	// x" and error number 0; a real failure (e.g. authentication) carries a
	// number.
	if errors.As(err, &apiErr) && apiErr.StatusCode < 300 && !apiErr.hasNumberedError() && len(resp.Nodes) == 0 {
		apiErr.notFound = true
		return nil, apiErr
	}
	if err != nil {
		return nil, err
	}
	for i := range resp.Nodes {
		if resp.Nodes[i].Name == name {
			return &resp.Nodes[i], nil
		}
	}
	notFound := NewNotFoundError(name)
	notFound.Method, notFound.Path = http.MethodGet, "/slurm/"+APIVersion+"/node/"+url.PathEscape(name)
	return nil, notFound
}

func (e *APIError) hasNumberedError() bool {
	for _, entry := range e.Errors {
		if entry.ErrorNumber != 0 {
			return true
		}
	}
	return false
}

func (c *httpClient) UpdateNode(ctx context.Context, name string, update NodeUpdate) error {
	if name == "" {
		return errors.New("slurm: empty node name")
	}
	var resp response
	return c.do(ctx, http.MethodPost, "node/"+url.PathEscape(name), update, &resp)
}

// DeleteNode sends DELETE /slurm/v0.0.44/node/{name}.
func (c *httpClient) DeleteNode(ctx context.Context, name string) error {
	if name == "" {
		return errors.New("slurm: empty node name")
	}
	var resp response
	return c.do(ctx, http.MethodDelete, "node/"+url.PathEscape(name), nil, &resp)
}

func (c *httpClient) ListJobs(ctx context.Context) ([]Job, error) {
	var resp jobsResponse
	if err := c.do(ctx, http.MethodGet, "jobs", nil, &resp); err != nil {
		return nil, err
	}
	return resp.Jobs, nil
}

// envelope lets do read errors[] from any response type.
type envelope interface{ apiErrors() []ErrorEntry }

func (r *response) apiErrors() []ErrorEntry { return r.Errors }

// do sends one request and decodes the answer into out. Any non-2xx status
// or non-empty errors[] becomes an *APIError. The observer, if any, learns
// how it went.
func (c *httpClient) do(ctx context.Context, method, endpoint string, body any, out envelope) error {
	if c.observer == nil {
		_, err := c.send(ctx, method, endpoint, body, out)
		return err
	}
	start := c.now()
	code, err := c.send(ctx, method, endpoint, body, out)
	op, _, _ := strings.Cut(endpoint, "/")
	c.observer(method+" "+op, code, c.now().Sub(start), err)
	return err
}

// send is do without the observer; it returns the HTTP status, 0 when no
// answer came.
func (c *httpClient) send(ctx context.Context, method, endpoint string, body any, out envelope) (int, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	token, err := c.tokens.Token()
	if err != nil {
		return 0, err
	}
	var reqBody io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("slurm: encoding %s request: %w", endpoint, err)
		}
		reqBody = bytes.NewReader(b)
	}
	// endpoint arrives escaped; NewRequest keeps an escaped node name
	// ("a%2Fb") escaped on the wire.
	rawURL := c.baseURL.String() + "/slurm/" + APIVersion + "/" + endpoint
	req, err := http.NewRequestWithContext(ctx, method, rawURL, reqBody)
	if err != nil {
		return 0, fmt.Errorf("slurm: %w", err)
	}
	path := req.URL.EscapedPath()
	req.Header.Set("Accept", "application/json")
	if body != nil {
		// slurmrestd parses form encoding otherwise and fails without a word.
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(HeaderUserName, c.tokens.UserName())
	req.Header.Set(HeaderUserToken, token)

	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("slurm: %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("slurm: %s %s: reading response: %w", method, path, err)
	}

	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if decodeErr := json.Unmarshal(data, out); decodeErr != nil {
		if ok {
			return resp.StatusCode, fmt.Errorf("slurm: %s %s: decoding response: %w", method, path, decodeErr)
		}
		return resp.StatusCode, &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, Body: snippet(data)}
	}
	if apiErrs := out.apiErrors(); !ok || len(apiErrs) > 0 {
		return resp.StatusCode, &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, Errors: apiErrs}
	}
	return resp.StatusCode, nil
}

// snippet is the start of a non-JSON body, on one line.
func snippet(data []byte) string {
	const limit = 256
	s := strings.Join(strings.Fields(string(data)), " ")
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}
