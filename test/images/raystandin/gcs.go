package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard/standin"
)

// The stand-in's "GCS" is an HTTP server with one health endpoint; this is
// the whole protocol between `ray start`, `ray health-check` and workers.
// It has nothing of Ray's gRPC GCS.
const (
	gcsHealthPath     = "/healthz"
	gcsDashboardPath  = "/dashboard_address"
	healthReply       = standin.HealthReply
	healthCheckBudget = 3 * time.Second
	// gcsClusterIDHeader carries the id a head's GCS draws when it starts.
	// Without GCS fault tolerance a new head is a new cluster: a raylet that
	// registered with the old GCS is unknown to the new one and exits. The
	// stand-in's workers compare the id to find that out.
	gcsClusterIDHeader = "Ray-Standin-Cluster-Id"
)

func newClusterID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func gcsHandler(o startOptions) http.Handler {
	mux := http.NewServeMux()
	id := newClusterID()
	mux.HandleFunc("GET "+gcsHealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(gcsClusterIDHeader, id)
		_, _ = io.WriteString(w, healthReply)
	})
	// Lets `ray job` commands given a GCS address (RAY_ADDRESS in a Ray
	// container) find the dashboard, as Ray looks it up in the GCS.
	mux.HandleFunc("GET "+gcsDashboardPath, func(w http.ResponseWriter, r *http.Request) {
		if !o.includeDashboard {
			http.Error(w, "ray-standin: the dashboard is off (--include-dashboard=false)", http.StatusNotFound)
			return
		}
		host := o.dashboardHost
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = r.Host
			if h, _, err := net.SplitHostPort(r.Host); err == nil {
				host = h
			}
		}
		_, _ = io.WriteString(w, "http://"+net.JoinHostPort(host, strconv.Itoa(o.dashboardPort)))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "ray-standin: this is not a Ray GCS; it answers only GET "+gcsHealthPath, http.StatusNotFound)
	})
	return mux
}

// gcsHostPort turns a GCS address (host, host:port, or with a scheme) into
// host:port.
func gcsHostPort(address string) string {
	if _, rest, ok := strings.Cut(address, "://"); ok {
		address = rest
	}
	address = strings.TrimSuffix(address, "/")
	if _, _, err := net.SplitHostPort(address); err == nil {
		return address
	}
	return net.JoinHostPort(strings.Trim(address, "[]"), strconv.Itoa(defaultGCSPort))
}

// checkGCS asks the GCS at address for its health reply within timeout.
func checkGCS(address string, timeout time.Duration) error {
	_, err := gcsClusterID(address, timeout)
	return err
}

// gcsClusterID asks the GCS at address for its health reply within timeout
// and returns the cluster id it answers with.
func gcsClusterID(address string, timeout time.Duration) (string, error) {
	hostPort := gcsHostPort(address)
	client := &http.Client{Timeout: timeout}
	resp, err := client.Get("http://" + hostPort + gcsHealthPath)
	if err != nil {
		return "", fmt.Errorf("GCS at %s is not reachable: %w", hostPort, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), healthReply) {
		return "", fmt.Errorf("GCS at %s answered %s %q, not the stand-in's health reply %q (is it a Ray stand-in GCS port?)",
			hostPort, resp.Status, strings.TrimSpace(string(body)), healthReply)
	}
	return resp.Header.Get(gcsClusterIDHeader), nil
}

// waitForGCS retries checkGCS until it succeeds, timeout passes or ctx ends.
func waitForGCS(ctx context.Context, address string, timeout time.Duration, log *logger) error {
	deadline := time.Now().Add(timeout)
	interval := min(time.Second, max(timeout/10, 50*time.Millisecond))
	for attempt := 1; ; attempt++ {
		err := checkGCS(address, min(healthCheckBudget, max(time.Until(deadline), 100*time.Millisecond)))
		if err == nil {
			return nil
		}
		if time.Now().Add(interval).After(deadline) {
			return fmt.Errorf("gave up waiting for the GCS after %s (%d attempts): %w", timeout, attempt, err)
		}
		if attempt == 1 {
			log.printf("waiting up to %s for the GCS at %s: %v", timeout, gcsHostPort(address), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

func runHealthCheck(args []string, out, errl *logger) int {
	p, err := parseFlags(args, flagSpec{values: set("address", "component"), bools: set("skip-version-check")})
	if err != nil {
		errl.printf("ray health-check: %v", err)
		return 2
	}
	if c := p.values["component"]; c != "" {
		errl.printf("ray health-check: --component=%s is not supported by the stand-in", c)
		return 2
	}
	address := p.values["address"]
	if address == "" && len(p.positional) == 1 {
		address = p.positional[0]
	}
	if address == "" {
		address = os.Getenv("RAY_ADDRESS")
	}
	if address == "" {
		address = "127.0.0.1:" + strconv.Itoa(defaultGCSPort)
	}
	if err := checkGCS(address, healthCheckBudget); err != nil {
		errl.printf("ray health-check: %v", err)
		return 1
	}
	out.printf("GCS at %s is healthy", gcsHostPort(address))
	return 0
}
