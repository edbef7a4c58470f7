package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestHealthCheck(t *testing.T) {
	_, ports := startTestHead(t)

	for _, args := range [][]string{
		{"health-check", "--address", ports.gcsAddr()},
		{"health-check", "--address=" + ports.gcsAddr()},
		{"health-check", "--address", "http://" + ports.gcsAddr() + "/"},
	} {
		code, out, errOut := runCLI(args...)
		if code != 0 || !strings.Contains(out, "is healthy") {
			t.Errorf("ray %q = %d, stdout %q stderr %q; want 0", args, code, out, errOut)
		}
	}
	t.Setenv("RAY_ADDRESS", ports.gcsAddr())
	if code, _, errOut := runCLI("health-check"); code != 0 {
		t.Errorf("ray health-check with RAY_ADDRESS = %d %q, want 0", code, errOut)
	}
}

func TestHealthCheckFailures(t *testing.T) {
	closed := "127.0.0.1:" + strconv.Itoa(freePort(t))
	code, out, errOut := runCLI("health-check", "--address", closed)
	if code != 1 || out != "" {
		t.Errorf("against a closed port = %d, stdout %q; want 1 and nothing on stdout", code, out)
	}
	for _, want := range []string{logPrefix + "ray health-check: GCS at " + closed + " is not reachable", "connection refused"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}

	// Something answers, but not the stand-in GCS: a clear refusal too.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	addr := strings.TrimPrefix(other.URL, "http://")
	code, _, errOut = runCLI("health-check", "--address", addr)
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("GCS at %s answered 404 Not Found", addr)) {
		t.Errorf("against a non-GCS server = %d %q, want 1 naming the 404", code, errOut)
	}

	if code, _, errOut := runCLI("health-check", "--address", closed, "--component", "raylet"); code != 2 || !strings.Contains(errOut, "--component=raylet is not supported") {
		t.Errorf("--component = %d %q, want 2", code, errOut)
	}
}

func TestGCSHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"head:6380":             "head:6380",
		"head":                  "head:6379",
		"http://head:1/":        "head:1",
		"ray://10.0.0.1:10001":  "10.0.0.1:10001",
		"[::1]:7000":            "[::1]:7000",
		"rc-head-svc.ns.svc:80": "rc-head-svc.ns.svc:80",
	} {
		if got := gcsHostPort(in); got != want {
			t.Errorf("gcsHostPort(%q) = %q, want %q", in, got, want)
		}
	}
}
