// Package realslurm tests pkg/slurm against a real slurmctld + slurmrestd
// (Debian's Slurm 26.05, API v0.0.44) that start.sh runs in a chroot.
//
// With GANTRY_SLURM_URL, GANTRY_SLURM_JWT_KEY, GANTRY_SLURM_USER and
// GANTRY_SLURM_ROOT set (start.sh prints them) the tests use that cluster and
// leave it running; otherwise TestMain runs start.sh and stop.sh itself.
// Where the cluster cannot be built (not root, no debootstrap, no mirror) the
// tests skip and say why; -short skips them too.
package realslurm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cluster is how to reach the Slurm under test.
type cluster struct {
	url      string
	jwtKey   []byte
	userName string
	// root is the chroot holding Slurm's commands and config.
	root string
	// noAccounting says why the chroot has no slurmdbd or MariaDB (empty
	// when it has both).
	noAccounting string
}

var (
	theCluster *cluster
	// skipReason is set when no cluster could be had for a reason that is
	// not a defect (see start.sh's exit status 3).
	skipReason string
)

// startExitCannotRun is start.sh's "cannot run here" status.
const startExitCannotRun = 3

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if testing.Short() {
		skipReason = "real Slurm tests do not run with -short"
		return m.Run()
	}
	if os.Getenv("GANTRY_SLURM_URL") != "" {
		c, err := clusterFromEnv(os.Getenv)
		if err != nil {
			fmt.Fprintln(os.Stderr, "realslurm:", err)
			return 1
		}
		theCluster = c
		return m.Run()
	}

	c, stop, err := startCluster()
	var cannotRun *cannotRunError
	switch {
	case errors.As(err, &cannotRun):
		skipReason = cannotRun.reason
		return m.Run()
	case err != nil:
		fmt.Fprintln(os.Stderr, "realslurm: starting Slurm:", err)
		return 1
	}
	theCluster = c

	// An interrupted run must not leave daemons behind either.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		stop()
		os.Exit(1)
	}()
	defer stop()
	return m.Run()
}

type cannotRunError struct{ reason string }

func (e *cannotRunError) Error() string { return e.reason }

// scriptDir is where start.sh lives: go test runs a package's tests in its
// directory.
func scriptDir() (string, error) { return os.Getwd() }

// startCluster runs start.sh on free ports and returns the cluster and a
// function that stops it.
func startCluster() (*cluster, func(), error) {
	if os.Geteuid() != 0 {
		return nil, nil, &cannotRunError{"real Slurm needs root (debootstrap, chroot, mount); run as root or set GANTRY_SLURM_URL"}
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, nil, err
	}
	dir, err := scriptDir()
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		cmd := exec.Command(filepath.Join(dir, "stop.sh"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "realslurm: stop.sh:", err)
		}
	}

	began := time.Now()
	cmd := exec.Command(filepath.Join(dir, "start.sh"))
	cmd.Env = append(os.Environ(),
		"SLURMCTLD_PORT="+strconv.Itoa(ports[0]),
		"SLURMRESTD_PORT="+strconv.Itoa(ports[1]))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() == startExitCannotRun {
		return nil, nil, &cannotRunError{lastLine(stderr.String())}
	}
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("start.sh: %w\n%s", err, stderr.String())
	}
	fmt.Fprintf(os.Stderr, "realslurm: Slurm up in %s\n", time.Since(began).Round(100*time.Millisecond))

	env := map[string]string{}
	scanner := bufio.NewScanner(&stdout)
	for scanner.Scan() {
		if k, v, ok := strings.Cut(scanner.Text(), "="); ok {
			env[k] = v
		}
	}
	c, err := clusterFromEnv(func(k string) string { return env[k] })
	if err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}

func clusterFromEnv(getenv func(string) string) (*cluster, error) {
	c := &cluster{url: getenv("GANTRY_SLURM_URL"), userName: getenv("GANTRY_SLURM_USER"), root: getenv("GANTRY_SLURM_ROOT"),
		noAccounting: getenv("GANTRY_SLURM_NO_ACCOUNTING")}
	keyPath := getenv("GANTRY_SLURM_JWT_KEY")
	if c.url == "" || keyPath == "" || c.userName == "" || c.root == "" {
		return nil, errors.New("GANTRY_SLURM_URL, GANTRY_SLURM_JWT_KEY, GANTRY_SLURM_USER and GANTRY_SLURM_ROOT must all be set")
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("reading the jwt key: %w", err)
	}
	c.jwtKey = key
	return c, nil
}

// freePorts asks the kernel for n unused loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], "SKIP: ")
}

// requireCluster skips the test when no cluster could be started.
func requireCluster(t *testing.T) *cluster {
	t.Helper()
	if theCluster == nil {
		t.Skip(skipReason)
	}
	return theCluster
}

// inRoot runs a Slurm command inside the chroot, as root (a Slurm admin).
func (c *cluster) inRoot(t *testing.T, args ...string) string {
	t.Helper()
	out, err := execInRoot(c.root, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func execInRoot(root string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "chroot", append([]string{root}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
