package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

func TestJobSubmitWaitsForTheResult(t *testing.T) {
	_, ports := startTestHead(t)
	base := ports.dashboardURL()

	code, out, errOut := runCLI("job", "submit", "--address", base, "--", "sh", "-c", "echo hi; exit 3")
	if code != 1 {
		t.Errorf("failing job: exit %d, want 1; stderr %q", code, errOut)
	}
	if !strings.Contains(out, "\nhi\n") || !strings.Contains(out, "failed: Job entrypoint command failed with exit code 3") {
		t.Errorf("failing job output:\n%s", out)
	}

	code, out, errOut = runCLI("job", "submit", "--address="+base, "--submission-id", "ok-1",
		"--runtime-env-json", `{"env_vars":{"WHO":"world"}}`, "--", `echo "hello $WHO"`)
	if code != 0 || !strings.Contains(out, "hello world\n") || !strings.Contains(out, "Job 'ok-1' succeeded") {
		t.Errorf("succeeding job: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	// Entrypoint words without "--".
	if code, out, _ := runCLI("job", "submit", "--address", base, "echo", "a  b"); code != 0 || !strings.Contains(out, "\na  b\n") {
		t.Errorf("entrypoint without --: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCLI("job", "submit", "--address", base, "--submission-id", "ok-1", "--", "true"); code != 1 || !strings.Contains(errOut, "Please use a different submission_id") {
		t.Errorf("reused submission ID: exit %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("job", "submit", "--address", base, "--runtime-env-json", "{nope", "--", "true"); code != 2 || !strings.Contains(errOut, "--runtime-env-json") {
		t.Errorf("bad --runtime-env-json: exit %d %q", code, errOut)
	}
	if code, _, _ := runCLI("job", "submit", "--address", base); code != 2 {
		t.Errorf("no entrypoint: exit %d, want 2", code)
	}
}

func TestJobStatusLogsStopDelete(t *testing.T) {
	_, ports := startTestHead(t)
	base := ports.dashboardURL()

	code, out, _ := runCLI("job", "submit", "--address", base, "--submission-id", "long", "--no-wait", "--", "echo begun; sleep 100")
	if code != 0 || !strings.Contains(out, "Job 'long' submitted successfully") {
		t.Fatalf("submit --no-wait: %d %s", code, out)
	}
	eventually(t, 5*time.Second, "job output", func() error {
		if _, out, _ := runCLI("job", "logs", "--address", base, "long"); out != "begun\n" {
			return fmt.Errorf("logs %q", out)
		}
		return nil
	})
	if code, out, _ := runCLI("job", "status", "--address", base, "long"); code != 0 || !strings.Contains(out, "Status for job 'long': RUNNING") {
		t.Errorf("status: %d %s", code, out)
	}
	if code, _, errOut := runCLI("job", "status", "--address", base, "missing"); code != 1 || !strings.Contains(errOut, "job does not exist: missing") {
		t.Errorf("status of a missing job: %d %q, want 1", code, errOut)
	}
	if code, _, errOut := runCLI("job", "delete", "--address", base, "long"); code != 1 || !strings.Contains(errOut, "400") {
		t.Errorf("delete of a running job: %d %q, want 1", code, errOut)
	}
	if code, out, _ := runCLI("job", "stop", "--address", base, "long"); code != 0 || !strings.Contains(out, "Job 'long' is STOPPED") {
		t.Errorf("stop: %d %s", code, out)
	}
	if code, out, _ := runCLI("job", "logs", "--address", base, "long"); code != 0 || out != "begun\n" {
		t.Errorf("logs: %d %q", code, out)
	}
	if code, out, _ := runCLI("job", "logs", "--address", base, "--follow", "long"); code != 0 || out != "begun\n" {
		t.Errorf("logs --follow of an ended job: %d %q", code, out)
	}
	if code, out, _ := runCLI("job", "delete", "--address", base, "long"); code != 0 || !strings.Contains(out, "deleted successfully") {
		t.Errorf("delete: %d %s", code, out)
	}
	if code, _, _ := runCLI("job", "status", "--address", base); code != 2 {
		t.Errorf("status without an ID: %d, want 2", code)
	}
}

func TestJobLogsFollowStreams(t *testing.T) {
	_, ports := startTestHead(t)
	base := ports.dashboardURL()
	if code, _, errOut := runCLI("job", "submit", "--address", base, "--submission-id", "s", "--no-wait", "--",
		"echo one; sleep 0.3; echo two; exit 5"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCLI("job", "logs", "--address", base, "-f", "s")
	// `ray job logs` reports the logs, not the job's result.
	if code != 0 || out != "one\ntwo\n" {
		t.Errorf("logs -f: %d %q %q, want 0 and both lines once", code, out, errOut)
	}
}

// TestJobAddressFromGCS: inside a Ray container RAY_ADDRESS is the GCS
// address; the CLI finds the dashboard from it.
func TestJobAddressFromGCS(t *testing.T) {
	_, ports := startTestHead(t)
	t.Setenv("RAY_ADDRESS", ports.gcsAddr())
	if code, out, errOut := runCLI("job", "submit", "--", "echo via gcs"); code != 0 || !strings.Contains(out, "via gcs") {
		t.Errorf("submit with RAY_ADDRESS=%s: %d\n%s\n%s", ports.gcsAddr(), code, out, errOut)
	}
}

func TestEntrypointFromArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"python script.py --x 1"}, "python script.py --x 1"},
		{[]string{"python", "script.py", "--x=1"}, "python script.py --x=1"},
		{[]string{"sh", "-c", "echo 'a b'; exit 3"}, `sh -c 'echo '\''a b'\''; exit 3'`},
		{[]string{"echo", ""}, "echo ''"},
	} {
		if got := entrypointFromArgs(c.args); got != c.want {
			t.Errorf("entrypointFromArgs(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// kuberayK8sJobModeScript builds the submitter script as KubeRay v1.6.0's
// BuildJobSubmitCommand does for K8sJobMode
// (ray-operator/controllers/ray/common/job.go): words joined by spaces,
// JSON values strconv.Quote'd, run with /bin/bash -ce.
func kuberayK8sJobModeScript(address, jobID, entrypoint string) string {
	cmd := []string{"if", "!", "ray", "job", "status", "--address", address, jobID, ">/dev/null", "2>&1", ";", "then"}
	cmd = append(cmd, "ray", "job", "submit", "--address", address, "--no-wait")
	cmd = append(cmd, "--runtime-env-json", strconv.Quote(`{"env_vars":{"GREETING":"hello"}}`))
	cmd = append(cmd, "--metadata-json", strconv.Quote(`{"owner":"test"}`))
	cmd = append(cmd, "--submission-id", jobID)
	cmd = append(cmd, "--entrypoint-num-cpus", fmt.Sprintf("%f", float32(1)))
	cmd = append(cmd, "--entrypoint-num-gpus", fmt.Sprintf("%f", float32(0.5)))
	cmd = append(cmd, "--entrypoint-resources", strconv.Quote(`{"custom": 1}`))
	cmd = append(cmd, "--", entrypoint, ";", "fi", ";")
	cmd = append(cmd, "ray", "job", "logs", "--address", address, "--follow", jobID)
	return strings.Join(cmd, " ")
}

// TestKubeRaySubmitterScript runs KubeRay's K8sJobMode submitter script
// with the stand-in as `ray`, twice: the second run (a retried submitter
// Pod) must not submit again but follow the logs.
func TestKubeRaySubmitterScript(t *testing.T) {
	_, ports := startTestHead(t)
	bin := t.TempDir()
	if err := os.Symlink(testBinary(t), filepath.Join(bin, "ray")); err != nil {
		t.Fatal(err)
	}
	env := append(standinEnv(t, t.TempDir()), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	script := kuberayK8sJobModeScript(ports.dashboardURL(), "rayjob-xyz", `sh -c 'echo $GREETING from the job'`)

	for attempt := 1; attempt <= 2; attempt++ {
		cmd := exec.Command("/bin/bash", "-ce", "--", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("attempt %d: %v\n%s", attempt, err, out)
		}
		if !strings.Contains(string(out), "hello from the job\n") {
			t.Errorf("attempt %d output lacks the job's line:\n%s", attempt, out)
		}
		submitted := strings.Contains(string(out), "submitted successfully")
		if submitted != (attempt == 1) {
			t.Errorf("attempt %d submitted=%v:\n%s", attempt, submitted, out)
		}
	}
	info, raw := jobInfo(t, ports.dashboardURL(), "rayjob-xyz")
	if info.JobStatus != dashboard.JobSucceeded || info.Metadata["owner"] != "test" || raw["entrypoint_num_gpus"] != 0.5 {
		t.Errorf("job as submitted: %+v %v", info, raw)
	}
	if raw["entrypoint_resources"].(map[string]any)["custom"] != 1.0 {
		t.Errorf("entrypoint_resources = %v", raw["entrypoint_resources"])
	}
	if info.Entrypoint != `sh -c 'echo $GREETING from the job'` {
		t.Errorf("entrypoint = %q", info.Entrypoint)
	}
}
