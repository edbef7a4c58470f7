// Package lib holds the shell library hack/lib/local-component.sh; this test
// runs its start sequence's wait in bash against stand-in controllers.
package lib

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitReady sources local-component.sh in bash, starts CONTROLLER with the
// given start command (which must write $STATE/controller.pid, as the JobSet
// and Kueue scripts do) and runs wait_ready against a readyz that answers
// 200. It returns wait_ready's exit error and combined output.
func waitReady(t *testing.T, controllerScript, start string) (error, string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	readyz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(readyz.Close)

	dir := t.TempDir()
	controller := filepath.Join(dir, "stand-in-controller")
	if err := os.WriteFile(controller, []byte("#!/bin/sh\n"+controllerScript), 0o755); err != nil {
		t.Fatal(err)
	}
	lib, err := filepath.Abs("local-component.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := `set -euo pipefail
. "$LIB"
start_controller() { ` + start + `; }
start_controller
wait_ready "${READYZ#http://}" true
echo READY
stop_controller
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "LIB="+lib, "NAME=stand-in", "STATE="+dir,
		"CONTROLLER="+controller, "READYZ="+readyz.URL, "BIN="+dir)
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("wait_ready did not return; output:\n%s", out)
	}
	return err, string(out)
}

// A controller whose process is slow to exec (the machine is busy, so the
// forked shell has not yet become nohup or the controller when wait_ready
// first looks) is still starting, not gone: CI once failed with "the jobset
// controller exited" and an empty log.
func TestWaitReadyWhileTheForkHasNotExecYet(t *testing.T) {
	err, out := waitReady(t, "trap 'exit 0' TERM\nwhile :; do sleep 0.2; done\n",
		`( sleep 1; exec nohup "$CONTROLLER" ) >"$STATE/controller.log" 2>&1 & echo $! >"$STATE/controller.pid"`)
	if err != nil || !strings.Contains(out, "READY") {
		t.Fatalf("wait_ready failed while the controller was starting: %v\n%s", err, out)
	}
}

// A controller that exits is reported with its log, at once.
func TestWaitReadyReportsAnExitedController(t *testing.T) {
	err, out := waitReady(t, "echo 'flag provided but not defined: -bogus'\nexit 2\n",
		`nohup "$CONTROLLER" >"$STATE/controller.log" 2>&1 & echo $! >"$STATE/controller.pid"`)
	if err == nil || strings.Contains(out, "READY") {
		t.Fatalf("wait_ready succeeded for a controller that exited:\n%s", out)
	}
	for _, want := range []string{"the stand-in controller exited", "flag provided but not defined: -bogus"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
