package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
	k8sjson "k8s.io/apimachinery/pkg/util/json"
)

// submitJob posts a job the way KubeRay's SubmitJobReq does and returns the
// job ID it reads from the reply.
func submitJob(t *testing.T, base string, req kuberayRayJobRequest) string {
	t.Helper()
	code, body := httpDo(t, http.MethodPost, base+"/api/jobs/", req)
	if code != http.StatusOK {
		t.Fatalf("submit: %d %s", code, body)
	}
	var resp kuberayRayJobResponse
	if err := k8sjson.Unmarshal(body, &resp); err != nil || resp.JobId == "" {
		t.Fatalf("submit reply %s: %v", body, err)
	}
	var raw map[string]string
	if err := json.Unmarshal(body, &raw); err != nil || raw["submission_id"] != resp.JobId {
		t.Errorf("submit reply %s: want submission_id equal to job_id", body)
	}
	return resp.JobId
}

// jobInfo reads a job as KubeRay's GetJobInfo does, and checks that every
// field KubeRay decodes is present.
func jobInfo(t *testing.T, base, id string) (kuberayRayJobInfo, map[string]any) {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, base+"/api/jobs/"+id, nil)
	if code != http.StatusOK {
		t.Fatalf("GET job %s: %d %s", id, code, body)
	}
	var info kuberayRayJobInfo
	if err := k8sjson.Unmarshal(body, &info); err != nil {
		t.Fatalf("decoding %s with KubeRay's RayJobInfo: %v", body, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	requireJSONKeys(t, "job details", raw, reflect.TypeFor[kuberayRayJobInfo]())
	if raw["type"] != "SUBMISSION" {
		t.Errorf("type = %v, want SUBMISSION", raw["type"])
	}
	return info, raw
}

func waitJob(t *testing.T, base, id string) (kuberayRayJobInfo, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, raw := jobInfo(t, base, id)
		if info.JobStatus.IsTerminal() {
			return info, raw
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after 10s", id, info.JobStatus)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func jobLogs(t *testing.T, base, id string) string {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, base+"/api/jobs/"+id+"/logs", nil)
	if code != http.StatusOK {
		t.Fatalf("logs of %s: %d %s", id, code, body)
	}
	var resp kuberayRayJobLogsResponse
	if err := k8sjson.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Logs
}

func TestJobFailsWithItsExitCode(t *testing.T) {
	_, ports := startTestHead(t)
	base := ports.dashboardURL()
	id := submitJob(t, base, kuberayRayJobRequest{Entrypoint: "sh -c 'echo hi; echo oops >&2; exit 3'"})
	if !strings.HasPrefix(id, "raysubmit_") || len(id) != len("raysubmit_")+16 {
		t.Errorf("generated submission ID %q, want raysubmit_ and 16 characters", id)
	}
	info, raw := waitJob(t, base, id)
	if info.JobStatus != dashboard.JobFailed || raw["driver_exit_code"] != 3.0 {
		t.Errorf("status %s driver_exit_code %v, want FAILED and 3", info.JobStatus, raw["driver_exit_code"])
	}
	if info.ErrorType == nil || *info.ErrorType == "" || !strings.Contains(info.Message, "exit code 3") {
		t.Errorf("error_type %v message %q", info.ErrorType, info.Message)
	}
	if info.StartTime == 0 || info.EndTime < info.StartTime || info.JobId == "" || info.SubmissionId != id {
		t.Errorf("start %d end %d job_id %q submission_id %q", info.StartTime, info.EndTime, info.JobId, info.SubmissionId)
	}
	if logs := jobLogs(t, base, id); logs != "hi\noops\n" {
		t.Errorf("logs = %q, want stdout and stderr: %q", logs, "hi\noops\n")
	}
	// The driver's job ID finds the job too.
	if got, _ := jobInfo(t, base, info.JobId); got.SubmissionId != id {
		t.Errorf("lookup by job_id %s found %q", info.JobId, got.SubmissionId)
	}
}

func TestJobSucceeds(t *testing.T) {
	_, ports := startTestHead(t)
	base := ports.dashboardURL()
	req := kuberayRayJobRequest{
		Entrypoint:   `echo "greeting=$GREETING ray_address=$RAY_ADDRESS"`,
		SubmissionId: "rayjob-sample-abc",
		Metadata:     map[string]string{"owner": "test"},
		RuntimeEnv:   map[string]any{"env_vars": map[string]any{"GREETING": "hello"}, "pip": []any{"requests"}},
		NumCpus:      1,
		Resources:    map[string]float32{"custom": 2},
	}
	if id := submitJob(t, base, req); id != req.SubmissionId {
		t.Fatalf("submitted as %q, want the given %q", id, req.SubmissionId)
	}
	info, raw := waitJob(t, base, req.SubmissionId)
	if info.JobStatus != dashboard.JobSucceeded || raw["driver_exit_code"] != 0.0 || info.ErrorType != nil {
		t.Errorf("status %s exit code %v error_type %v, want SUCCEEDED 0 nil", info.JobStatus, raw["driver_exit_code"], info.ErrorType)
	}
	if info.Metadata["owner"] != "test" || info.Entrypoint != req.Entrypoint || info.RuntimeEnv["pip"] == nil {
		t.Errorf("metadata %v entrypoint %q runtime_env %v not kept", info.Metadata, info.Entrypoint, info.RuntimeEnv)
	}
	if raw["entrypoint_num_cpus"] != 1.0 || !reflect.DeepEqual(raw["entrypoint_resources"], map[string]any{"custom": 2.0}) {
		t.Errorf("entrypoint_num_cpus %v entrypoint_resources %v", raw["entrypoint_num_cpus"], raw["entrypoint_resources"])
	}
	if logs, want := jobLogs(t, base, req.SubmissionId), fmt.Sprintf("greeting=hello ray_address=%s\n", ports.gcsAddr()); logs != want {
		t.Errorf("logs = %q, want %q", logs, want)
	}

	// The list is what KubeRay's ListJobs decodes.
	code, body := httpDo(t, http.MethodGet, base+"/api/jobs/", nil)
	var list []kuberayRayJobInfo
	if err := k8sjson.Unmarshal(body, &list); code != http.StatusOK || err != nil || len(list) != 1 || list[0].SubmissionId != req.SubmissionId {
		t.Errorf("list: %d %s (%v)", code, body, err)
	}
}

func TestJobStop(t *testing.T) {
	_, ports := startTestHead(t)
	base := ports.dashboardURL()
	id := submitJob(t, base, kuberayRayJobRequest{Entrypoint: "echo started; sleep 100"})
	eventually(t, 5*time.Second, "job output", func() error {
		if !strings.Contains(jobLogs(t, base, id), "started") {
			return fmt.Errorf("no output yet")
		}
		return nil
	})
	if info, _ := jobInfo(t, base, id); info.JobStatus != dashboard.JobRunning {
		t.Fatalf("status %s, want RUNNING", info.JobStatus)
	}
	stop := func() bool {
		code, body := httpDo(t, http.MethodPost, base+"/api/jobs/"+id+"/stop", nil)
		var resp kuberayRayJobStopResponse
		if err := k8sjson.Unmarshal(body, &resp); code != http.StatusOK || err != nil {
			t.Fatalf("stop: %d %s", code, body)
		}
		return resp.Stopped
	}
	began := time.Now()
	if !stop() {
		t.Fatal("stop of a running job answered stopped=false")
	}
	info, _ := waitJob(t, base, id)
	if info.JobStatus != dashboard.JobStopped {
		t.Errorf("status after stop = %s, want STOPPED", info.JobStatus)
	}
	// SIGTERM reaches sleep in the job's process group: no SIGKILL wait.
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("stop took %s", took)
	}
	if stop() {
		t.Error("stop of a stopped job answered stopped=true")
	}
}

func TestJobUnknownID(t *testing.T) {
	_, ports := startTestHead(t)
	base := ports.dashboardURL()
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api/jobs/nope"},
		{http.MethodGet, "/api/jobs/nope/logs"},
		{http.MethodPost, "/api/jobs/nope/stop"},
		{http.MethodDelete, "/api/jobs/nope"},
	} {
		if code, body := httpDo(t, c.method, base+c.path, nil); code != http.StatusNotFound {
			t.Errorf("%s %s = %d %s, want 404", c.method, c.path, code, body)
		}
	}
}

func TestJobDelete(t *testing.T) {
	_, ports := startTestHead(t)
	base := ports.dashboardURL()
	running := submitJob(t, base, kuberayRayJobRequest{Entrypoint: "sleep 100"})
	if code, body := httpDo(t, http.MethodDelete, base+"/api/jobs/"+running, nil); code != http.StatusBadRequest || !strings.Contains(string(body), "non-terminal") {
		t.Errorf("delete of a running job = %d %s, want 400", code, body)
	}
	if info, _ := jobInfo(t, base, running); info.JobStatus != dashboard.JobRunning {
		t.Errorf("the refused delete changed the job: %s", info.JobStatus)
	}

	done := submitJob(t, base, kuberayRayJobRequest{Entrypoint: "true"})
	waitJob(t, base, done)
	code, body := httpDo(t, http.MethodDelete, base+"/api/jobs/"+done, nil)
	var resp map[string]bool
	if err := json.Unmarshal(body, &resp); code != http.StatusOK || err != nil || !resp["deleted"] {
		t.Errorf("delete of a finished job = %d %s, want 200 {\"deleted\": true}", code, body)
	}
	if code, _ := httpDo(t, http.MethodGet, base+"/api/jobs/"+done, nil); code != http.StatusNotFound {
		t.Errorf("GET after delete = %d, want 404", code)
	}
}

func TestJobSubmitValidation(t *testing.T) {
	_, ports := startTestHead(t)
	base := ports.dashboardURL()
	for name, body := range map[string]string{
		"not JSON":          "{",
		"no entrypoint":     `{"submission_id": "x"}`,
		"negative cpus":     `{"entrypoint": "true", "entrypoint_num_cpus": -1}`,
		"env var not text":  `{"entrypoint": "true", "runtime_env": {"env_vars": {"A": 1}}}`,
		"metadata not text": `{"entrypoint": "true", "metadata": {"a": 1}}`,
	} {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/jobs/", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, resp.StatusCode)
		}
	}

	// A reused submission ID: the 500 and sentence KubeRay's SubmitJobReq
	// recognises.
	submitJob(t, base, kuberayRayJobRequest{Entrypoint: "true", SubmissionId: "dup"})
	code, body := httpDo(t, http.MethodPost, base+"/api/jobs/", kuberayRayJobRequest{Entrypoint: "true", SubmissionId: "dup"})
	if code != http.StatusInternalServerError || !strings.Contains(string(body), "Please use a different submission_id") {
		t.Errorf("duplicate submission = %d %s", code, body)
	}
}

func TestJobsKilledWhenHeadStops(t *testing.T) {
	head, ports := startTestHead(t)
	base := ports.dashboardURL()
	pidFile := filepath.Join(t.TempDir(), "pid")
	submitJob(t, base, kuberayRayJobRequest{Entrypoint: "echo $$ > " + pidFile + "; exec sleep 100"})
	var pid int
	eventually(t, 5*time.Second, "the job's pid", func() error {
		data, err := os.ReadFile(pidFile)
		if err == nil {
			pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		return err
	})
	head.Close()
	if !waitGone(pid, 5*time.Second) {
		t.Errorf("job process %d survived the head", pid)
	}
}
