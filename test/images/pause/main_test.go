package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "GANTRY_PAUSE_TEST_HELPER"

// TestMain runs pause itself when the test binary is started as the helper:
// a child subreaper (so orphans come to it as they would to PID 1) that,
// once its handlers are in place, starts a shell that leaves five
// background sleeps behind and exits. The shell and the sleeps become
// zombies unless pause reaps them.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "1" {
		os.Exit(m.Run())
	}
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Println("prctl:", errno)
		os.Exit(3)
	}
	ready := make(chan struct{})
	go func() {
		<-ready
		sh := exec.Command("/bin/sh", "-c", "for i in 1 2 3 4 5; do sleep 0.3 & done; exit 0")
		if err := sh.Start(); err != nil {
			fmt.Println("start:", err)
			os.Exit(3)
		}
		fmt.Println("ready")
	}()
	os.Exit(pause(ready))
}

// children returns "pid state" of each process whose parent is ppid.
func children(t *testing.T, ppid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		if pp, _ := strconv.Atoi(fields[1]); pp == ppid {
			out = append(out, strings.Fields(s)[0]+" "+fields[0])
		}
	}
	return out
}

// helper is a running pause; exited is closed when it has exited, with
// err its Wait result.
type helper struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// wait returns the helper's Wait result, or fails the test if it has not
// exited within d.
func (h *helper) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-h.exited:
		return h.err
	case <-time.After(d):
		t.Fatalf("pause has not exited within %v", d)
		return nil
	}
}

func startHelper(t *testing.T) *helper {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	h := &helper{cmd: cmd, exited: make(chan struct{})}
	go func() {
		h.err = cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-h.exited
	})
	if line != "ready\n" {
		t.Fatalf("helper said %q (%v), want ready", line, err)
	}
	return h
}

func TestReapsAndExitsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			h := startHelper(t)
			pid := h.cmd.Process.Pid
			// The shell exits at once and its sleeps after 0.3 s: all of them
			// must be gone, not left as zombies ("Z").
			deadline := time.Now().Add(5 * time.Second)
			for {
				left := children(t, pid)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("children of pause (pid state) still there after 5s: %v", left)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err := h.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := h.wait(t, 5*time.Second); err != nil {
				t.Fatalf("pause after %v: %v, want exit 0", sig, err)
			}
		})
	}
}

func TestStaysUp(t *testing.T) {
	h := startHelper(t)
	// Its children gone, nothing to do: pause must keep running.
	select {
	case <-h.exited:
		t.Fatalf("pause exited on its own: %v", h.err)
	case <-time.After(time.Second):
	}
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := h.wait(t, 5*time.Second); err != nil {
		t.Fatalf("pause after SIGTERM: %v", err)
	}
}
