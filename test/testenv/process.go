package testenv

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ManagerProcess is the real manager binary (bin/manager), or another
// operator's, running as its own process against a test control plane: its memory is measured alone,
// and it can be killed the way a node failure kills it.
type ManagerProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	// Log is the file its output goes to.
	Log string
}

// ManagerBinary is bin/manager, built by `make manager` (make bench and
// make test-chaos depend on it).
func ManagerBinary() (string, error) {
	bin := filepath.Join(RepoRoot(), "bin", "manager")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is missing; run `make manager`: %w", bin, err)
	}
	return bin, nil
}

// StartManagerProcess runs bin/manager with the kubeconfig written to dir,
// its metrics, probes and webhooks off, errors only in its log
// (dir/manager-<name>.log), and args appended.
func StartManagerProcess(kubeconfig []byte, dir, name string, args ...string) (*ManagerProcess, error) {
	bin, err := ManagerBinary()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "kubeconfig-"+name)
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	all := append([]string{"--kubeconfig", path, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--webhook-port=0", "--zap-log-level=error"}, args...)
	return StartProcess(bin, all, nil, filepath.Join(dir, "manager-"+name+".log"))
}

// StartProcess runs any operator binary with args, env added to this
// process's environment, and its output appended to logPath: how the
// side-by-side benchmark runs upstream operators.
func StartProcess(bin string, args, env []string, logPath string) (*ManagerProcess, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, err
	}
	p := &ManagerProcess{cmd: cmd, done: make(chan struct{}), Log: logPath}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's id.
func (m *ManagerProcess) Pid() int { return m.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (m *ManagerProcess) Exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// PeakRSSMiB is the process's peak resident set (VmHWM) so far.
func (m *ManagerProcess) PeakRSSMiB() float64 {
	return VmHWMMiB(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
}

// Kill sends SIGKILL, as a crash or a lost node does, and waits for the
// process to end.
func (m *ManagerProcess) Kill() {
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// Stop sends SIGTERM and waits for the graceful shutdown.
func (m *ManagerProcess) Stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	<-m.done
}

// RSSMiB is the process's resident set now, split as the kernel counts it:
// anonymous memory (heap, stacks) and pages of files (its binary's code and
// data as they are first touched).
func (m *ManagerProcess) RSSMiB() (anon, file float64) {
	path := fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid)
	return statusMiB(path, "RssAnon:"), statusMiB(path, "RssFile:")
}

// VmHWMMiB reads a process's peak resident set (VmHWM) in MiB from its
// /proc/<pid>/status file (/proc/self/status for this process); 0 when it
// cannot be read.
func VmHWMMiB(statusFile string) float64 { return statusMiB(statusFile, "VmHWM:") }

// statusMiB reads the field (with its colon) of a /proc/<pid>/status file,
// given in kB, as MiB; 0 when it cannot be read.
func statusMiB(statusFile, field string) float64 {
	f, err := os.Open(statusFile)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), field) {
			if kb, err := strconv.Atoi(strings.Fields(s.Text())[1]); err == nil {
				return float64(kb) / 1024
			}
		}
	}
	return 0
}

// CPUSeconds is the user plus system CPU time the process has used so far;
// 0 when it cannot be read.
func (m *ManagerProcess) CPUSeconds() float64 { return ProcessCPUSeconds(m.cmd.Process.Pid) }

// ProcessCPUSeconds is the user plus system CPU time process pid has used
// so far; 0 when it cannot be read (no such process).
func ProcessCPUSeconds(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis; utime and stime are fields 14 and 15.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return (utime + stime) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// WaitReady polls the process's /readyz on probe (host:port, plain HTTP)
// until it answers 200, failing early with the end of its log when the
// process exits.
func (m *ManagerProcess) WaitReady(probe string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if m.Exited() {
			log, _ := os.ReadFile(m.Log)
			return fmt.Errorf("the process exited:\n%s", TailLines(string(log), 30))
		}
		if resp, err := http.Get("http://" + probe + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("/readyz on %s did not answer 200 within %s (log %s)", probe, timeout, m.Log)
}
