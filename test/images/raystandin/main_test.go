package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/test/syncbuf"
)

// TestMain lets the test binary act as `ray` when RAY_STANDIN_AS_MAIN=1, so
// tests can exec real stand-in processes without building the binary.
func TestMain(m *testing.M) {
	if os.Getenv("RAY_STANDIN_AS_MAIN") == "1" {
		main()
	}
	jobPollInterval = 50 * time.Millisecond
	os.Exit(m.Run())
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type headPorts struct{ gcs, dashboard, agent, metrics, client int }

func newHeadPorts(t *testing.T) headPorts {
	return headPorts{freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)}
}

func (p headPorts) args() []string {
	return []string{
		"--head", "--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1",
		"--port=" + strconv.Itoa(p.gcs),
		"--dashboard-port=" + strconv.Itoa(p.dashboard),
		"--dashboard-agent-listen-port=" + strconv.Itoa(p.agent),
		"--metrics-export-port=" + strconv.Itoa(p.metrics),
		"--ray-client-server-port=" + strconv.Itoa(p.client),
	}
}

func (p headPorts) gcsAddr() string      { return fmt.Sprintf("127.0.0.1:%d", p.gcs) }
func (p headPorts) dashboardURL() string { return fmt.Sprintf("http://127.0.0.1:%d", p.dashboard) }

// startTestHead runs a head node in this process on free loopback ports.
// Its log is shown if the test fails. A port found free may be taken
// before the head binds it (by another test's process, or as the ephemeral
// port of someone's outgoing connection): then it tries other ports.
func startTestHead(t *testing.T) (*node, headPorts) {
	t.Helper()
	t.Setenv(envServePort, "0")
	var log syncbuf.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("head log:\n%s", log.String())
		}
	})
	for attempt := 1; ; attempt++ {
		ports := newHeadPorts(t)
		o, err := parseStartArgs(ports.args())
		if err != nil {
			t.Fatal(err)
		}
		n, err := startNode(context.Background(), o, newLogger(&log))
		if err != nil && errors.Is(err, syscall.EADDRINUSE) && attempt < 5 {
			t.Logf("attempt %d: %v; trying other ports", attempt, err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		return n, ports
	}
}

// standinEnv is the environment of an exec'd stand-in process.
func standinEnv(t *testing.T, stateDir string, extra ...string) []string {
	env := append(os.Environ(), "RAY_STANDIN_AS_MAIN=1", envStateDir+"="+stateDir, envServePort+"=0", "RAY_ADDRESS=")
	return append(env, extra...)
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func rayCommand(t *testing.T, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(testBinary(t), args...)
	cmd.Env = env
	return cmd
}

// runCLI runs the stand-in's command line in this process.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func httpDo(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// eventually retries f every 20ms until it returns nil or d passes.
func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requirePrefixed fails unless every non-empty line starts with the
// stand-in's prefix.
func requirePrefixed(t *testing.T, what, output string) {
	t.Helper()
	for line := range strings.SplitSeq(output, "\n") {
		if line != "" && !strings.HasPrefix(line, logPrefix) {
			t.Errorf("%s line %q does not start with %q", what, line, logPrefix)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		code, out, errOut := runCLI(arg)
		if code != 0 || out != "ray, version standin\n" || errOut != "" {
			t.Errorf("ray %s = %d, stdout %q, stderr %q; want 0 and %q", arg, code, out, errOut, "ray, version standin\n")
		}
	}
}

func TestUnsupportedSubcommand(t *testing.T) {
	for _, args := range [][]string{{"kuberay-autoscaler", "--cluster-name", "x"}, {"status"}, {"job", "wait", "x"}} {
		code, out, errOut := runCLI(args...)
		if code != 2 {
			t.Errorf("ray %q exit code = %d, want 2", args, code)
		}
		sub := args[0]
		if sub == "job" {
			sub = "job " + args[1]
		}
		want := logPrefix + "ray stand-in: " + sub + " is not supported\n"
		if errOut != want || out != "" {
			t.Errorf("ray %q: stdout %q stderr %q, want stderr %q", args, out, errOut, want)
		}
	}
	if code, _, errOut := runCLI(); code != 2 || !strings.HasPrefix(errOut, logPrefix) {
		t.Errorf("ray with no arguments = %d %q, want 2 and a prefixed usage line", code, errOut)
	}
}

func TestLoggerPrefixesEveryLine(t *testing.T) {
	var b bytes.Buffer
	newLogger(&b).printf("one\ntwo\n")
	if got, want := b.String(), "ray-standin: one\nray-standin: two\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func listenOn(port int) (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
}

// httpGetBody GETs url and wants 200.
func httpGetBody(url string) (string, error) {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %s %q", url, resp.Status, b)
	}
	return string(b), nil
}
