package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard/standin"
)

// Default ports; they are Ray's and equal Gantry's constants in
// pkg/controller/ray/podspec (a test checks that).
const (
	defaultGCSPort            = 6379
	defaultDashboardPort      = 8265
	defaultClientPort         = 10001
	defaultServePort          = 8000
	defaultMetricsPort        = 8080
	defaultDashboardAgentPort = 52365
	defaultDashboardHost      = "127.0.0.1"
)

// Environment variables of the stand-in itself (not Ray's).
const (
	// envStateDir is where the pidfile and the background log live
	// (default /tmp/ray-standin).
	envStateDir = "RAY_STANDIN_DIR"
	// envServePort is the Serve proxy port, 0 for none. Real Ray takes it
	// from the Serve config, which the stand-in cannot act on.
	envServePort = "RAY_STANDIN_SERVE_PORT"
	// envGCSWaitTimeout bounds a worker's wait for the GCS (a Go duration,
	// default 30s).
	envGCSWaitTimeout = "RAY_STANDIN_GCS_WAIT_TIMEOUT"
	// envDaemonChild and envReadyFD are set on the background process that
	// `ray start` without --block forks.
	envDaemonChild = "RAY_STANDIN_DAEMON_CHILD"
	envReadyFD     = "RAY_STANDIN_READY_FD"
	// envGCSReconnectTimeout is Ray's own: how long a raylet survives
	// without its GCS. Gantry sets it on workers of fault-tolerant clusters.
	envGCSReconnectTimeout = "RAY_gcs_rpc_server_reconnect_timeout_s"
)

const (
	defaultGCSWaitTimeout      = 30 * time.Second
	defaultGCSReconnectTimeout = 60 * time.Second
	defaultStopGrace           = 10 * time.Second
)

func stateDir() string {
	if d := os.Getenv(envStateDir); d != "" {
		return d
	}
	return "/tmp/ray-standin"
}

func pidfilePath() string { return filepath.Join(stateDir(), "ray.pid") }

type startOptions struct {
	head  bool
	block bool
	// address is the GCS a worker joins, host:port.
	address          string
	nodeIP           string
	dashboardHost    string
	includeDashboard bool
	gcsPort          int
	dashboardPort    int
	agentPort        int
	metricsPort      int
	clientPort       int
	resources        map[string]float64
	labels           map[string]string
	// unknown are the flags given that the stand-in does not act on.
	unknown []string
}

var startSpec = flagSpec{
	values: set("address", "port", "dashboard-host", "dashboard-port", "dashboard-agent-listen-port",
		"metrics-export-port", "ray-client-server-port", "node-ip-address", "num-cpus", "num-gpus",
		"memory", "resources", "labels", "include-dashboard"),
	bools:             set("head", "block"),
	unknownTakesValue: true,
}

// parseStartArgs reads `ray start` flags. Values Ray itself would reject
// (a port that is not a number, a fractional --num-cpus, --resources that is
// not JSON, e.g. because the shell quoting around it went wrong) are errors,
// so a bad generated command fails here as it would with Ray.
func parseStartArgs(args []string) (startOptions, error) {
	p, err := parseFlags(args, startSpec)
	if err != nil {
		return startOptions{}, err
	}
	o := startOptions{
		head:             p.bools["head"],
		block:            p.bools["block"],
		address:          p.values["address"],
		nodeIP:           p.values["node-ip-address"],
		dashboardHost:    defaultDashboardHost,
		includeDashboard: true,
		unknown:          p.unknown,
	}
	if v, ok := p.values["dashboard-host"]; ok {
		o.dashboardHost = v
	}
	ports := []struct {
		flag string
		def  int
		dst  *int
	}{
		{"port", defaultGCSPort, &o.gcsPort},
		{"dashboard-port", defaultDashboardPort, &o.dashboardPort},
		{"dashboard-agent-listen-port", defaultDashboardAgentPort, &o.agentPort},
		{"metrics-export-port", defaultMetricsPort, &o.metricsPort},
		{"ray-client-server-port", defaultClientPort, &o.clientPort},
	}
	for _, pt := range ports {
		*pt.dst = pt.def
		if v, ok := p.values[pt.flag]; ok {
			n, err := parsePort(v)
			if err != nil {
				return startOptions{}, fmt.Errorf("--%s=%q: %w", pt.flag, v, err)
			}
			*pt.dst = n
		}
	}
	if v, ok := p.values["include-dashboard"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return startOptions{}, fmt.Errorf("--include-dashboard=%q: want true or false", v)
		}
		o.includeDashboard = b
	}
	// ray start declares these as integers.
	for _, f := range []string{"num-cpus", "num-gpus", "memory"} {
		if v, ok := p.values[f]; ok {
			if _, err := strconv.ParseUint(v, 10, 64); err != nil {
				return startOptions{}, fmt.Errorf("--%s=%q: ray start takes a whole number", f, v)
			}
		}
	}
	if v := p.values["resources"]; v != "" {
		if err := json.Unmarshal([]byte(v), &o.resources); err != nil {
			return startOptions{}, fmt.Errorf("--resources=%q is not a JSON object of numbers: %w", v, err)
		}
	}
	if v := p.values["labels"]; v != "" {
		if o.labels, err = parseLabels(v); err != nil {
			return startOptions{}, fmt.Errorf("--labels=%q: %w", v, err)
		}
	}
	if len(p.positional) > 0 {
		return startOptions{}, fmt.Errorf("unexpected argument %q", p.positional[0])
	}
	if !o.head && o.address == "" {
		return startOptions{}, errors.New("--address=<head>:<port> is required unless --head is given")
	}
	return o, nil
}

func parsePort(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return 0, errors.New("not a port number")
	}
	return n, nil
}

// parseLabels reads key=value,key=value, or a JSON object as older Ray
// versions took.
func parseLabels(v string) (map[string]string, error) {
	out := map[string]string{}
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		err := json.Unmarshal([]byte(v), &out)
		return out, err
	}
	for pair := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%q is not key=value", pair)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return out, nil
}

// node is a running head or worker.
type node struct {
	opts      startOptions
	log       *logger
	servers   []*http.Server
	listeners []net.Listener
	jobs      *standin.Jobs
	// addrs are the bound addresses by component, for messages and tests.
	addrs     map[string]string
	fatal     chan error
	done      chan struct{}
	closeOnce sync.Once
}

// startNode binds every port of the node and serves them. A worker first
// waits for its GCS, for at most envGCSWaitTimeout or until ctx ends.
func startNode(ctx context.Context, o startOptions, log *logger) (*node, error) {
	n := &node{opts: o, log: log, addrs: map[string]string{}, fatal: make(chan error, 1), done: make(chan struct{})}
	var joined string
	if !o.head {
		if err := waitForGCS(ctx, o.address, durationEnv(envGCSWaitTimeout, defaultGCSWaitTimeout), log); err != nil {
			return nil, err
		}
		// The cluster this worker joins: the GCS's id now, read before
		// the worker serves anything, so that a worker seen serving has
		// joined (a raylet registers with the GCS before it serves).
		var err error
		if joined, err = gcsClusterID(o.address, healthCheckBudget); err != nil {
			return nil, err
		}
	}
	if err := n.listenAll(); err != nil {
		n.Close()
		return nil, err
	}
	if !o.head {
		go n.watchGCS(o.address, joined, secondsEnv(envGCSReconnectTimeout, defaultGCSReconnectTimeout))
	}
	return n, nil
}

func (n *node) listenAll() error {
	o := n.opts
	listen := func(what, host string, port int) (net.Listener, error) {
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("cannot listen on %s for the %s: %w", addr, what, err)
		}
		n.listeners = append(n.listeners, ln)
		n.addrs[what] = ln.Addr().String()
		return ln, nil
	}
	serve := func(what, host string, port int, h http.Handler) error {
		ln, err := listen(what, host, port)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		n.servers = append(n.servers, srv)
		go func() { _ = srv.Serve(ln) }()
		return nil
	}

	if o.head {
		n.jobs = standin.NewJobs(net.JoinHostPort(loopbackIfAny(o.nodeIP), strconv.Itoa(o.gcsPort)), n.log.printf)
		var dash *standin.Dashboard
		if o.includeDashboard {
			dash = standin.NewDashboard(n.jobs, os.Getenv("RAY_AUTH_MODE"), os.Getenv("RAY_AUTH_TOKEN"))
		}
		if err := serve("gcs", o.nodeIP, o.gcsPort, gcsHandler(o)); err != nil {
			return err
		}
		if dash != nil {
			if err := serve("dashboard", o.dashboardHost, o.dashboardPort, dash.Handler()); err != nil {
				return err
			}
		}
		ln, err := listen("client server", o.nodeIP, o.clientPort)
		if err != nil {
			return err
		}
		go acceptAndClose(ln)
	}
	if err := serve("dashboard agent", o.nodeIP, o.agentPort, agentHandler()); err != nil {
		return err
	}
	nodeType := "worker"
	if o.head {
		nodeType = "head"
	}
	if err := serve("metrics", o.nodeIP, o.metricsPort, metricsHandler(nodeType)); err != nil {
		return err
	}
	if port := intEnv(envServePort, defaultServePort); port > 0 {
		// Best effort: real Ray starts this proxy only once Serve runs, so
		// a busy port must not keep the node from starting.
		if err := serve("serve proxy", o.nodeIP, port, serveProxyHandler()); err != nil {
			n.log.printf("warning: %v; no Serve proxy health endpoint on this node", err)
		}
	}
	return nil
}

// loopbackIfAny is the address a local client uses for a listener bound to
// host.
func loopbackIfAny(host string) string {
	if host == "" || host == "0.0.0.0" || host == "::" {
		return "127.0.0.1"
	}
	return host
}

func acceptAndClose(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}

// watchGCS ends the worker, as a raylet ends, when the GCS has not answered
// for timeout, or answers as another cluster than the one it joined (a new
// head without GCS fault tolerance).
func (n *node) watchGCS(address, joined string, timeout time.Duration) {
	interval := min(2*time.Second, max(timeout/4, 50*time.Millisecond))
	t := time.NewTicker(interval)
	defer t.Stop()
	var failingSince time.Time
	for {
		select {
		case <-n.done:
			return
		case <-t.C:
		}
		id, err := gcsClusterID(address, min(3*time.Second, max(interval, time.Second)))
		if err == nil && id != joined {
			n.fatal <- fmt.Errorf("the GCS at %s is a new cluster (id %s, joined %s): this node is unknown to it; exiting as a raylet would", address, id, joined)
			return
		}
		if err == nil {
			if !failingSince.IsZero() {
				n.log.printf("GCS at %s answers again", address)
			}
			failingSince = time.Time{}
			continue
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
			n.log.printf("lost the GCS at %s (%v); exiting if it stays away for %s (%s)", address, err, timeout, envGCSReconnectTimeout)
		}
		if time.Since(failingSince) >= timeout {
			n.fatal <- fmt.Errorf("the GCS at %s has been unreachable for %s; exiting as a raylet would: %v", address, timeout, err)
			return
		}
	}
}

// Close stops serving and kills running jobs. It is safe to call twice.
func (n *node) Close() {
	n.closeOnce.Do(func() {
		close(n.done)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		for _, s := range n.servers {
			_ = s.Shutdown(ctx)
		}
		for _, ln := range n.listeners {
			_ = ln.Close()
		}
		if n.jobs != nil {
			n.jobs.Shutdown()
		}
	})
}

func runStart(args []string, out, errl *logger) int {
	o, err := parseStartArgs(args)
	if err != nil {
		errl.printf("ray start: %v", err)
		return 2
	}
	if !o.block && os.Getenv(envDaemonChild) == "" {
		return startInBackground(args, out, errl)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if len(o.unknown) > 0 {
		out.printf("accepted and ignored (the stand-in does not implement them): %s", strings.Join(o.unknown, " "))
	}
	n, err := startNode(ctx, o, out)
	if err != nil {
		if ctx.Err() != nil {
			errl.printf("ray start: interrupted while starting")
		} else {
			errl.printf("ray start: %v", err)
		}
		return 1
	}
	defer n.Close()
	removePidfile := writePidfile(errl)
	defer removePidfile()
	signalReady()

	if o.head {
		out.printf("Ray stand-in head node started: this is NOT Ray (no scheduling, no object store, no real GCS)")
		out.printf("  GCS (stand-in health protocol) on %s", n.addrs["gcs"])
		if a, ok := n.addrs["dashboard"]; ok {
			out.printf("  dashboard and Jobs API on http://%s", a)
		}
		out.printf("  client server (accepts TCP only) on %s", n.addrs["client server"])
	} else {
		out.printf("Ray stand-in worker node started, joined GCS %s: this is NOT Ray", o.address)
	}
	out.printf("  dashboard agent on %s, metrics on %s", n.addrs["dashboard agent"], n.addrs["metrics"])
	if a, ok := n.addrs["serve proxy"]; ok {
		out.printf("  Serve proxy health on %s", a)
	}
	out.printf("running until SIGTERM or SIGINT (pid %d)", os.Getpid())

	select {
	case <-ctx.Done():
		out.printf("signal received; stopping")
		return 0
	case err := <-n.fatal:
		errl.printf("%v", err)
		return 1
	}
}

// writePidfile records this process for `ray stop`; the returned func
// removes the file if it still names this process.
func writePidfile(errl *logger) func() {
	path := pidfilePath()
	pid := strconv.Itoa(os.Getpid())
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		errl.printf("warning: cannot write %s, `ray stop` will not find this process: %v", path, err)
		return func() {}
	}
	if err := os.WriteFile(path, []byte(pid+"\n"), 0o644); err != nil {
		errl.printf("warning: cannot write %s, `ray stop` will not find this process: %v", path, err)
		return func() {}
	}
	return func() {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == pid {
			_ = os.Remove(path)
		}
	}
}

// signalReady tells the `ray start` that forked this process that its
// ports are open.
func signalReady() {
	v := os.Getenv(envReadyFD)
	if v == "" {
		return
	}
	_ = os.Unsetenv(envReadyFD)
	fd, err := strconv.Atoi(v)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "ready")
	_, _ = f.WriteString("ready\n")
	_ = f.Close()
}

// startInBackground is `ray start` without --block: run the same command in
// a new session, its output in a log file, and return once it serves.
func startInBackground(args []string, out, errl *logger) int {
	exe, err := os.Executable()
	if err != nil {
		errl.printf("ray start: cannot find my own binary: %v", err)
		return 1
	}
	if err := os.MkdirAll(stateDir(), 0o755); err != nil {
		errl.printf("ray start: %v", err)
		return 1
	}
	logPath := filepath.Join(stateDir(), "ray-start.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		errl.printf("ray start: %v", err)
		return 1
	}
	r, w, err := os.Pipe()
	if err != nil {
		errl.printf("ray start: %v", err)
		return 1
	}
	cmd := exec.Command(exe, append([]string{"start"}, args...)...)
	cmd.Env = append(os.Environ(), envDaemonChild+"=1", envReadyFD+"=3")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{w} // fd 3 in the child
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	_ = w.Close()
	_ = logFile.Close()
	if err != nil {
		_ = r.Close()
		errl.printf("ray start: %v", err)
		return 1
	}
	ready := make(chan bool, 1)
	go func() {
		b, _ := io.ReadAll(r) // EOF once the child closed fd 3 or exited
		ready <- strings.TrimSpace(string(b)) == "ready"
	}()
	timeout := durationEnv(envGCSWaitTimeout, defaultGCSWaitTimeout) + 30*time.Second
	select {
	case ok := <-ready:
		if !ok {
			errl.printf("ray start: the background process (pid %d) exited before serving; see %s", cmd.Process.Pid, logPath)
			_, _ = cmd.Process.Wait()
			return 1
		}
	case <-time.After(timeout):
		errl.printf("ray start: the background process (pid %d) did not serve within %s; see %s", cmd.Process.Pid, timeout, logPath)
		return 1
	}
	out.printf("Ray stand-in started in the background (pid %d), log %s; `ray stop` ends it", cmd.Process.Pid, logPath)
	_ = cmd.Process.Release()
	return 0
}

func runStop(args []string, out, errl *logger) int {
	p, err := parseFlags(args, flagSpec{values: set("grace-period"), bools: set("force", "verbose"), aliases: map[string]string{"f": "force", "v": "verbose", "g": "grace-period"}})
	if err != nil {
		errl.printf("ray stop: %v", err)
		return 2
	}
	grace := defaultStopGrace
	if v, ok := p.values["grace-period"]; ok {
		s, err := strconv.Atoi(v)
		if err != nil || s < 0 {
			errl.printf("ray stop: --grace-period=%q is not a number of seconds", v)
			return 2
		}
		grace = time.Duration(s) * time.Second
	}
	path := pidfilePath()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		out.printf("no running `ray start` found (no %s)", path)
		return 0
	}
	if err != nil {
		errl.printf("ray stop: %v", err)
		return 1
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		errl.printf("ray stop: %s does not hold a pid; removing it", path)
		_ = os.Remove(path)
		return 0
	}
	if !processAlive(pid) {
		out.printf("no running `ray start` found (pid %d from %s is gone)", pid, path)
		_ = os.Remove(path)
		return 0
	}
	sig := syscall.SIGTERM
	if p.bools["force"] {
		sig = syscall.SIGKILL
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		errl.printf("ray stop: signalling pid %d: %v", pid, err)
		return 1
	}
	if !waitGone(pid, grace) {
		errl.printf("ray stop: pid %d still runs after %s; killing it", pid, grace)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !waitGone(pid, 5*time.Second) {
			errl.printf("ray stop: pid %d survived SIGKILL", pid)
			return 1
		}
	}
	_ = os.Remove(path)
	out.printf("stopped `ray start` (pid %d)", pid)
	return 0
}

// processAlive: pid exists and is not a zombie waiting for its parent.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the parenthesised command name.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func durationEnv(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

func secondsEnv(name string, def time.Duration) time.Duration {
	if s, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	return def
}

func intEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n >= 0 {
		return n
	}
	return def
}
