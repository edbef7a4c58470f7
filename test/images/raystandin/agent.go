package main

import (
	"fmt"
	"io"
	"net/http"
)

// agentHandler is the dashboard agent of every node: the raylet health
// endpoint Gantry's exec probes wget, and /api/healthz, which its HTTP
// probes GET for Ray 2.53.0 and later.
func agentHandler() http.Handler {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, healthReply) }
	mux.HandleFunc("GET /api/local_raylet_healthz", ok)
	mux.HandleFunc("GET /api/healthz", ok)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "ray-standin: the dashboard agent stand-in answers only /api/local_raylet_healthz and /api/healthz", http.StatusNotFound)
	})
	return mux
}

// metricsHandler serves one gauge in the Prometheus text format.
func metricsHandler(nodeType string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprintf(w, "# HELP ray_standin_node_up 1 while the Ray stand-in (not Ray) runs on this node.\n"+
			"# TYPE ray_standin_node_up gauge\n"+
			"ray_standin_node_up{node_type=%q} 1\n", nodeType)
	})
	return mux
}

// serveProxyHandler answers the Serve proxy health check that Gantry's
// readiness probe of RayService workers and KubeRay's RayService controller
// use. It serves no application.
func serveProxyHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /-/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, healthReply)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "ray-standin: the Serve proxy stand-in serves no application", http.StatusNotFound)
	})
	return mux
}
