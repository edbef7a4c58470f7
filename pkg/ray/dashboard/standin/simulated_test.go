package standin

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// simulated serves simulated jobs planned by plan, and returns a client.
func simulated(t *testing.T, plan Plan) *dashboard.Client {
	t.Helper()
	jobs := NewSimulatedJobs(plan, t.Logf)
	t.Cleanup(jobs.Shutdown)
	srv := httptest.NewServer(NewDashboard(jobs, "", "").Handler())
	t.Cleanup(srv.Close)
	c, err := dashboard.New(dashboard.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitStatus polls the job until it reports want.
func waitStatus(t *testing.T, c *dashboard.Client, id string, want dashboard.JobStatus) *dashboard.JobDetails {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.JobInfo(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == want {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s, want %s", id, info.Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A simulated job runs nothing: it is RUNNING at once, and ends as planned.
func TestSimulatedJobsRunNothingAndEndAsPlanned(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	var planned []string
	c := simulated(t, func(req dashboard.JobRequest) (time.Duration, int) {
		planned = append(planned, req.SubmissionID)
		if req.SubmissionID == "fails" {
			return 50 * time.Millisecond, 3
		}
		return 300 * time.Millisecond, 0
	})
	ctx := context.Background()
	for _, id := range []string{"succeeds", "fails"} {
		if _, err := c.SubmitJob(ctx, dashboard.JobRequest{SubmissionID: id, Entrypoint: "touch " + marker}); err != nil {
			t.Fatal(err)
		}
	}
	info, err := c.JobInfo(ctx, "succeeds")
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != dashboard.JobRunning || info.JobID == nil {
		t.Errorf("just submitted: status %s, job ID %v; want RUNNING with a job ID", info.Status, info.JobID)
	}
	failed := waitStatus(t, c, "fails", dashboard.JobFailed)
	if failed.DriverExitCode == nil || *failed.DriverExitCode != 3 || failed.EndTime == nil {
		t.Errorf("failed job: exit code %v, end time %v; want 3 and a time", failed.DriverExitCode, failed.EndTime)
	}
	waitStatus(t, c, "succeeds", dashboard.JobSucceeded)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the entrypoint ran (stat: %v)", err)
	}
	if len(planned) != 2 {
		t.Errorf("planned %v, want each submission once", planned)
	}
	if _, err := c.SubmitJob(ctx, dashboard.JobRequest{SubmissionID: "fails", Entrypoint: "true"}); err == nil {
		t.Error("a reused submission ID was accepted")
	}
}

func TestSimulatedJobStops(t *testing.T) {
	c := simulated(t, func(dashboard.JobRequest) (time.Duration, int) { return time.Hour, 0 })
	ctx := context.Background()
	if _, err := c.SubmitJob(ctx, dashboard.JobRequest{SubmissionID: "long", Entrypoint: "sleep 3600"}); err != nil {
		t.Fatal(err)
	}
	if err := c.StopJob(ctx, "long"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, "long", dashboard.JobStopped)
	if err := c.DeleteJob(ctx, "long"); err != nil {
		t.Errorf("deleting the stopped job: %v", err)
	}
}
