package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gantry-dev/gantry/test/testenv"
)

// ManagerProcess is the real manager binary running against the benchmark's
// control plane, so its memory is measured alone (no harness in the
// process) the way an operator's RSS is measured in a cluster.
type ManagerProcess struct {
	cmd *exec.Cmd
}

// StartManagerProcess builds nothing: it runs bin/manager (built by
// `make manager`, which `make bench` depends on) with the given controllers.
func StartManagerProcess(env *testenv.Env, dir string, controllers string) (*ManagerProcess, error) {
	bin := filepath.Join(testenv.RepoRoot(), "bin", "manager")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s is missing; run `make manager` (make bench does): %w", bin, err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig(), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--controllers", controllers,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0", "--zap-log-level=error")
	log, err := os.Create(filepath.Join(dir, "manager.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &ManagerProcess{cmd: cmd}, nil
}

// PeakRSSMiB is the manager's peak resident set (VmHWM) so far.
func (m *ManagerProcess) PeakRSSMiB() float64 {
	return vmHWM(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
}

// Stop sends SIGTERM and waits for the graceful shutdown.
func (m *ManagerProcess) Stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	_ = m.cmd.Wait()
}

func vmHWM(statusFile string) float64 {
	f, err := os.Open(statusFile)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmHWM:") {
			if kb, err := strconv.Atoi(strings.Fields(s.Text())[1]); err == nil {
				return float64(kb) / 1024
			}
		}
	}
	return 0
}
