// Package kuberay checks Gantry's Ray code against KubeRay's own, imported
// from its module: the same inputs through both, and any difference that
// docs/raycluster.md does not list as deliberate fails.
package kuberay

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/dashboardclient"
	utiltypes "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/types"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard/standin"
)

// request is what a dashboard sees of one call. The Content-Type of a
// request without a body is left out: KubeRay sends one on stop and delete,
// Gantry does not, and Ray reads no body there (a deliberate difference).
type request struct {
	Method, Path, Query, Auth, ContentType string
	Body                                   any
}

// recorder answers every call with canned replies and records it.
type recorder struct {
	mu   sync.Mutex
	seen []request
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("x-ray-authorization")}
	if len(raw) > 0 {
		req.ContentType = r.Header.Get("Content-Type")
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			req.Body = string(raw)
		}
	}
	rec.mu.Lock()
	rec.seen = append(rec.seen, req)
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == dashboard.JobsPath:
		_, _ = io.WriteString(w, `{"job_id":"raysubmit_1","submission_id":"raysubmit_1"}`)
	case r.Method == http.MethodPost:
		_, _ = io.WriteString(w, `{"stopped":true}`)
	case r.URL.Path == dashboard.JobsPath:
		_, _ = io.WriteString(w, `[]`)
	case r.URL.Path == dashboard.ServePath:
		_, _ = io.WriteString(w, `{"applications":{}}`)
	case len(r.URL.Path) > 5 && r.URL.Path[len(r.URL.Path)-5:] == "/logs":
		_, _ = io.WriteString(w, `{"logs":"x"}`)
	default:
		_, _ = io.WriteString(w, `{"status":"RUNNING","submission_id":"s"}`)
	}
}

func (rec *recorder) take() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.seen
	rec.seen = nil
	return out
}

func kuberayClient(url, token string) *dashboardclient.RayDashboardClient {
	c := &dashboardclient.RayDashboardClient{}
	c.InitClient(&http.Client{Timeout: 5 * time.Second}, url, token)
	return c
}

func gantryClient(t *testing.T, url, token string) *dashboard.Client {
	t.Helper()
	c, err := dashboard.New(dashboard.Config{URL: url, AuthToken: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func f32(v float32) float32 { return v }

// TestRequestsMatchKubeRays sends each call through KubeRay's client and
// Gantry's and compares what the dashboard receives.
func TestRequestsMatchKubeRays(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	ctx := context.Background()

	type call struct {
		name    string
		kuberay func(c *dashboardclient.RayDashboardClient) error
		gantry  func(c *dashboard.Client) error
	}
	calls := []call{
		{"submit, every field",
			func(c *dashboardclient.RayDashboardClient) error {
				_, err := c.SubmitJobReq(ctx, &utiltypes.RayJobRequest{Entrypoint: "python train.py --epochs 3", SubmissionId: "rj-abc",
					RuntimeEnv: utiltypes.RuntimeEnvType{"env_vars": map[string]any{"A": "1"}, "pip": []any{"torch"}},
					Metadata:   map[string]string{"owner": "ml"}, NumCpus: f32(0.5), NumGpus: f32(1), Resources: map[string]float32{"TPU": 4}})
				return err
			},
			func(c *dashboard.Client) error {
				cpus, gpus := 0.5, 1.0
				_, err := c.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: "python train.py --epochs 3", SubmissionID: "rj-abc",
					RuntimeEnv: map[string]any{"env_vars": map[string]any{"A": "1"}, "pip": []any{"torch"}},
					Metadata:   map[string]string{"owner": "ml"}, EntrypointNumCPUs: &cpus, EntrypointNumGPUs: &gpus,
					EntrypointResources: map[string]float64{"TPU": 4}})
				return err
			}},
		{"submit, entrypoint only",
			func(c *dashboardclient.RayDashboardClient) error {
				_, err := c.SubmitJobReq(ctx, &utiltypes.RayJobRequest{Entrypoint: "echo hi"})
				return err
			},
			func(c *dashboard.Client) error {
				_, err := c.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: "echo hi"})
				return err
			}},
		{"job info",
			func(c *dashboardclient.RayDashboardClient) error { _, err := c.GetJobInfo(ctx, "rj-abc"); return err },
			func(c *dashboard.Client) error { _, err := c.JobInfo(ctx, "rj-abc"); return err }},
		{"list jobs",
			func(c *dashboardclient.RayDashboardClient) error { _, err := c.ListJobs(ctx); return err },
			func(c *dashboard.Client) error { _, err := c.ListJobs(ctx); return err }},
		{"job logs",
			func(c *dashboardclient.RayDashboardClient) error { _, err := c.GetJobLog(ctx, "rj-abc"); return err },
			func(c *dashboard.Client) error { _, err := c.JobLogs(ctx, "rj-abc"); return err }},
		{"stop",
			func(c *dashboardclient.RayDashboardClient) error { return c.StopJob(ctx, "rj-abc") },
			func(c *dashboard.Client) error { return c.StopJob(ctx, "rj-abc") }},
		{"delete",
			func(c *dashboardclient.RayDashboardClient) error { return c.DeleteJob(ctx, "rj-abc") },
			func(c *dashboard.Client) error { return c.DeleteJob(ctx, "rj-abc") }},
		{"serve details",
			func(c *dashboardclient.RayDashboardClient) error { _, err := c.GetServeDetails(ctx); return err },
			func(c *dashboard.Client) error { _, err := c.ServeDetails(ctx); return err }},
		{"deploy a Serve config",
			func(c *dashboardclient.RayDashboardClient) error {
				return c.UpdateDeployments(ctx, []byte(`{"applications":[{"name":"a","import_path":"m:app"}]}`))
			},
			func(c *dashboard.Client) error {
				return c.UpdateServeApplications(ctx, []byte(`{"applications":[{"name":"a","import_path":"m:app"}]}`))
			}},
	}
	for _, token := range []string{"", "tok"} {
		for _, c := range calls {
			if err := c.kuberay(kuberayClient(srv.URL, token)); err != nil {
				t.Fatalf("%s: KubeRay: %v", c.name, err)
			}
			want := rec.take()
			if err := c.gantry(gantryClient(t, srv.URL, token)); err != nil {
				t.Fatalf("%s: Gantry: %v", c.name, err)
			}
			got := rec.take()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (token %q):\n Gantry  %+v\n KubeRay %+v", c.name, token, got, want)
			}
		}
	}
}

// TestAnswersMatchKubeRays runs jobs on the stand-in dashboard through both
// clients and compares what each reports.
func TestAnswersMatchKubeRays(t *testing.T) {
	jobs := standin.NewJobs("127.0.0.1:6379", t.Logf)
	defer jobs.Shutdown()
	srv := httptest.NewServer(standin.NewDashboard(jobs, "token", "tok").Handler())
	defer srv.Close()
	ctx := context.Background()
	kr, g := kuberayClient(srv.URL, "tok"), gantryClient(t, srv.URL, "tok")

	wait := func(id string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if info, err := g.JobInfo(ctx, id); err == nil && info.Status.IsTerminal() {
				return
			}
		}
		t.Fatalf("job %s did not end", id)
	}
	compare := func(id string) {
		t.Helper()
		want, err := kr.GetJobInfo(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.JobInfo(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		end := uint64(0)
		if got.EndTime != nil {
			end = *got.EndTime
		}
		jobID := ""
		if got.JobID != nil {
			jobID = *got.JobID
		}
		if string(got.Status) != string(want.JobStatus) || got.Message != want.Message || got.SubmissionID != want.SubmissionId ||
			jobID != want.JobId || got.StartTime != want.StartTime || end != want.EndTime || got.Entrypoint != want.Entrypoint ||
			!reflect.DeepEqual(got.Metadata, want.Metadata) || !reflect.DeepEqual(got.ErrorType, want.ErrorType) {
			t.Errorf("job %s:\n Gantry  %+v\n KubeRay %+v", id, got, want)
		}
		wantLogs, err := kr.GetJobLog(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if gotLogs, err := g.JobLogs(ctx, id); err != nil || wantLogs == nil || gotLogs != *wantLogs {
			t.Errorf("logs of %s: Gantry %q, %v; KubeRay %v", id, gotLogs, err, wantLogs)
		}
	}

	for _, entry := range []string{"echo ok", "echo failing >&2; exit 4"} {
		id, err := g.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: entry, Metadata: map[string]string{"k": "v"}})
		if err != nil {
			t.Fatal(err)
		}
		wait(id)
		compare(id)
	}

	// A stopped job; stopping it again is not an error for either client.
	id, err := kr.SubmitJobReq(ctx, &utiltypes.RayJobRequest{Entrypoint: "sleep 60", SubmissionId: "to-stop"})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.StopJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	wait(id)
	compare(id)
	if err := kr.StopJob(ctx, id); err != nil {
		t.Errorf("KubeRay: stopping a stopped job: %v", err)
	}
	if err := g.StopJob(ctx, id); err != nil {
		t.Errorf("Gantry: stopping a stopped job: %v", err)
	}

	// A reused submission ID: both return the ID with an error.
	krID, krErr := kr.SubmitJobReq(ctx, &utiltypes.RayJobRequest{Entrypoint: "true", SubmissionId: "to-stop"})
	gID, gErr := g.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: "true", SubmissionID: "to-stop"})
	if krErr == nil || gErr == nil || krID != "to-stop" || gID != krID {
		t.Errorf("reused ID: KubeRay %q, %v; Gantry %q, %v", krID, krErr, gID, gErr)
	}

	// An unknown job is an error for both (KubeRay: BadRequest; Gantry:
	// IsNotFound).
	if _, err := kr.GetJobInfo(ctx, "nope"); err == nil {
		t.Error("KubeRay found an unknown job")
	}
	if _, err := g.JobInfo(ctx, "nope"); !dashboard.IsNotFound(err) {
		t.Errorf("Gantry: unknown job: %v", err)
	}

	// Serve: the same application statuses.
	config := []byte(`{"applications":[{"name":"fruit","route_prefix":"/f","import_path":"f:app","deployments":[{"name":"Mango"}]}]}`)
	if err := g.UpdateServeApplications(ctx, config); err != nil {
		t.Fatal(err)
	}
	want, err := kr.GetMultiApplicationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.ServeDetails(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Applications) != len(want) {
		t.Fatalf("applications: Gantry %+v, KubeRay %+v", got.Applications, want)
	}
	for name, w := range want {
		a := got.Applications[name]
		if a.Status != w.Status || a.Message != w.Message || len(a.Deployments) != len(w.Deployments) {
			t.Errorf("application %s: Gantry %+v, KubeRay %+v", name, a, w)
		}
		for dn, wd := range w.Deployments {
			if gd := a.Deployments[dn]; gd.Status != wd.Status || gd.Message != wd.Message {
				t.Errorf("deployment %s/%s: Gantry %+v, KubeRay %+v", name, dn, gd, wd)
			}
		}
	}
	if w, g := rayv1.IsJobTerminal(rayv1.JobStatusStopped), dashboard.JobStopped.IsTerminal(); w != g {
		t.Errorf("STOPPED terminal: KubeRay %v, Gantry %v", w, g)
	}
}

// TestTerminalStatusesMatch: the same statuses end a job for both.
func TestTerminalStatusesMatch(t *testing.T) {
	for _, s := range []string{"PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED", "", "OTHER"} {
		if w, g := rayv1.IsJobTerminal(rayv1.JobStatus(s)), dashboard.JobStatus(s).IsTerminal(); w != g {
			t.Errorf("%q: KubeRay terminal %v, Gantry %v", s, w, g)
		}
	}
}
