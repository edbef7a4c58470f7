package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard/standin"
)

const token = "secret-token"

// standinServer serves a stand-in dashboard that requires token, behind
// wrap (nil: nothing in front).
func standinServer(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	jobs := standin.NewJobs("127.0.0.1:6379", t.Logf)
	t.Cleanup(jobs.Shutdown)
	var h http.Handler = standin.NewDashboard(jobs, "token", token).Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func newClient(t *testing.T, cfg dashboard.Config) *dashboard.Client {
	t.Helper()
	c, err := dashboard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitJob polls until the job has ended.
func waitJob(t *testing.T, c *dashboard.Client, id string) *dashboard.JobDetails {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.JobInfo(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status.IsTerminal() {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s", id, info.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestJobLifecycle(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, dashboard.Config{URL: standinServer(t, nil), AuthToken: token})
	cpus := 0.5

	t.Run("a job that succeeds", func(t *testing.T) {
		id, err := c.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: `echo "hello $GREETING"`, SubmissionID: "ok-1",
			RuntimeEnv: map[string]any{"env_vars": map[string]any{"GREETING": "ray"}},
			Metadata:   map[string]string{"owner": "test"}, EntrypointNumCPUs: &cpus})
		if err != nil || id != "ok-1" {
			t.Fatalf("SubmitJob = %q, %v", id, err)
		}
		info := waitJob(t, c, id)
		if info.Status != dashboard.JobSucceeded || info.Metadata["owner"] != "test" || info.EntrypointNumCPUs == nil || *info.EntrypointNumCPUs != 0.5 {
			t.Errorf("job = %+v", info)
		}
		if info.EndTime == nil || *info.EndTime < info.StartTime {
			t.Errorf("start %d, end %v", info.StartTime, info.EndTime)
		}
		logs, err := c.JobLogs(ctx, id)
		if err != nil || !strings.Contains(logs, "hello ray") {
			t.Errorf("logs = %q, %v", logs, err)
		}
		jobs, err := c.ListJobs(ctx)
		if err != nil || len(jobs) == 0 || jobs[0].SubmissionID != "ok-1" {
			t.Errorf("ListJobs = %+v, %v", jobs, err)
		}
	})

	t.Run("a job that fails", func(t *testing.T) {
		id, err := c.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: "exit 3"})
		if err != nil || !strings.HasPrefix(id, "raysubmit_") {
			t.Fatalf("SubmitJob = %q, %v: want the dashboard's generated ID", id, err)
		}
		info := waitJob(t, c, id)
		if info.Status != dashboard.JobFailed || !strings.Contains(info.Message, "exit code 3") {
			t.Errorf("job = %s %q", info.Status, info.Message)
		}
	})

	t.Run("a stopped job", func(t *testing.T) {
		id, err := c.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: "sleep 60", SubmissionID: "stop-1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.StopJob(ctx, id); err != nil {
			t.Fatal(err)
		}
		if info := waitJob(t, c, id); info.Status != dashboard.JobStopped {
			t.Errorf("status = %s, want STOPPED", info.Status)
		}
		// Stopping an ended job is not an error.
		if err := c.StopJob(ctx, id); err != nil {
			t.Errorf("second StopJob: %v", err)
		}
		if err := c.DeleteJob(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := c.JobInfo(ctx, id); !dashboard.IsNotFound(err) {
			t.Errorf("JobInfo after delete = %v, want not found", err)
		}
		if err := c.DeleteJob(ctx, id); err != nil {
			t.Errorf("deleting a deleted job: %v", err)
		}
	})

	t.Run("a reused submission ID", func(t *testing.T) {
		id, err := c.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: "true", SubmissionID: "ok-1"})
		if !errors.Is(err, dashboard.ErrSubmissionIDInUse) || id != "ok-1" {
			t.Errorf("SubmitJob = %q, %v; want ok-1 and ErrSubmissionIDInUse", id, err)
		}
	})

	t.Run("an unknown job", func(t *testing.T) {
		_, err := c.JobInfo(ctx, "nope")
		if !dashboard.IsNotFound(err) {
			t.Errorf("JobInfo = %v, want not found", err)
		}
	})
}

func TestAuthToken(t *testing.T) {
	url := standinServer(t, nil)
	for _, tok := range []string{"", "wrong"} {
		c := newClient(t, dashboard.Config{URL: url, AuthToken: tok})
		_, err := c.ListJobs(context.Background())
		var apiErr *dashboard.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: err = %v, want 401", tok, err)
		}
	}
}

func TestServeApplications(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, dashboard.Config{URL: standinServer(t, nil), AuthToken: token})
	details, err := c.ServeDetails(ctx)
	if err != nil || len(details.Applications) != 0 {
		t.Fatalf("ServeDetails before any config = %+v, %v", details, err)
	}
	config := `{"applications":[{"name":"fruit","route_prefix":"/fruit","import_path":"fruit:app",
		"deployments":[{"name":"MangoStand"},{"name":"OrangeStand"}]}]}`
	if err := c.UpdateServeApplications(ctx, []byte(config)); err != nil {
		t.Fatal(err)
	}
	details, err = c.ServeDetails(ctx)
	if err != nil {
		t.Fatal(err)
	}
	app, ok := details.Applications["fruit"]
	if !ok || app.Status != dashboard.ServeAppRunning || app.RoutePrefix != "/fruit" || len(app.Deployments) != 2 ||
		app.Deployments["MangoStand"].Status != dashboard.ServeDeploymentHealthy {
		t.Errorf("applications = %+v", details.Applications)
	}
	if err := c.UpdateServeApplications(ctx, []byte("{not json")); err == nil {
		t.Error("an invalid config was sent")
	}
}

// flaky answers status to the first n requests, then passes them on.
func flaky(status int, n int32, count *atomic.Int32) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if count.Add(1) <= n {
				http.Error(w, "unavailable", status)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	fast := dashboard.Config{AuthToken: token, Backoff: time.Millisecond}

	t.Run("idempotent requests are retried after a 503", func(t *testing.T) {
		var count atomic.Int32
		cfg := fast
		cfg.URL = standinServer(t, flaky(http.StatusServiceUnavailable, 2, &count))
		if _, err := newClient(t, cfg).ListJobs(ctx); err != nil {
			t.Fatalf("ListJobs after two 503s: %v", err)
		}
		if got := count.Load(); got != 3 {
			t.Errorf("requests = %d, want 3", got)
		}
	})

	t.Run("retries give up", func(t *testing.T) {
		var count atomic.Int32
		cfg := fast
		cfg.URL = standinServer(t, flaky(http.StatusBadGateway, 100, &count))
		_, err := newClient(t, cfg).ListJobs(ctx)
		var apiErr *dashboard.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway {
			t.Errorf("err = %v, want the last 502", err)
		}
		if got := count.Load(); got != 1+dashboard.DefaultRetries {
			t.Errorf("requests = %d, want %d", got, 1+dashboard.DefaultRetries)
		}
	})

	t.Run("a submission without an ID is sent once", func(t *testing.T) {
		var count atomic.Int32
		cfg := fast
		cfg.URL = standinServer(t, flaky(http.StatusServiceUnavailable, 1, &count))
		if _, err := newClient(t, cfg).SubmitJob(ctx, dashboard.JobRequest{Entrypoint: "true"}); err == nil {
			t.Error("SubmitJob succeeded through a 503")
		}
		if got := count.Load(); got != 1 {
			t.Errorf("requests = %d, want 1: a repeat could start the job twice", got)
		}
	})

	t.Run("a client error is not retried", func(t *testing.T) {
		var count atomic.Int32
		cfg := fast
		cfg.URL = standinServer(t, flaky(http.StatusBadRequest, 100, &count))
		if _, err := newClient(t, cfg).JobInfo(ctx, "x"); err == nil {
			t.Error("JobInfo succeeded through a 400")
		}
		if got := count.Load(); got != 1 {
			t.Errorf("requests = %d, want 1", got)
		}
	})
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := newClient(t, dashboard.Config{URL: srv.URL, HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}, Retries: -1})
	start := time.Now()
	if _, err := c.ListJobs(context.Background()); err == nil {
		t.Fatal("ListJobs returned without an error from a server that never answers")
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("waited %v for a 50ms timeout", waited)
	}
}

func TestDefaultTimeoutIsKubeRays(t *testing.T) {
	// KubeRay's RayHTTPClientDirectTimeoutSeconds (utils/constant.go, v1.7.0).
	if dashboard.DefaultTimeout != 2*time.Second {
		t.Errorf("DefaultTimeout = %v", dashboard.DefaultTimeout)
	}
}

func TestNewRefusesABadURL(t *testing.T) {
	for _, u := range []string{"", "rc-head-svc:8265", "ftp://x", "http://"} {
		if _, err := dashboard.New(dashboard.Config{URL: u}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

func TestRequestsOnTheWire(t *testing.T) {
	type seen struct{ method, path, query, auth, contentType, body string }
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("x-ray-authorization"), r.Header.Get("Content-Type"), string(body)})
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/jobs/":
			_ = json.NewEncoder(w).Encode(map[string]string{"submission_id": "s"})
		case strings.HasSuffix(r.URL.Path, "/stop"):
			_, _ = w.Write([]byte(`{"stopped":true}`))
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := newClient(t, dashboard.Config{URL: srv.URL + "/", AuthToken: "t"})
	if _, err := c.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: "python x.py", SubmissionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := c.StopJob(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ServeDetails(ctx); err != nil {
		t.Fatal(err)
	}
	want := []seen{
		{"POST", "/api/jobs/", "", "Bearer t", "application/json", `{"entrypoint":"python x.py","submission_id":"s"}`},
		{"POST", "/api/jobs/s/stop", "", "Bearer t", "", ""},
		{"GET", "/api/serve/applications/", "api_type=declarative", "Bearer t", "", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("requests = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
