package standin

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// Dashboard is the head's HTTP API: health, version, Jobs and Serve.
type Dashboard struct {
	jobs  *Jobs
	serve *serveState
	// token, when set (RAY_AUTH_MODE=token and RAY_AUTH_TOKEN on the
	// head), is required as "Bearer <token>" in x-ray-authorization or
	// Authorization on the Jobs and Serve APIs, the header KubeRay's
	// dashboard client sends.
	token string
}

// NewDashboard serves jobs' API and a Serve API. With authMode "token"
// (RAY_AUTH_MODE), the Jobs and Serve APIs require authToken.
func NewDashboard(jobs *Jobs, authMode, authToken string) *Dashboard {
	d := &Dashboard{jobs: jobs, serve: &serveState{}}
	if strings.EqualFold(authMode, "token") {
		d.token = authToken
	}
	return d
}

// Handler is the dashboard's HTTP API.
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/gcs_healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, HealthReply)
	})
	mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"version":      Version,
			"ray_version":  Version,
			"ray_commit":   Version,
			"session_name": "standin",
			"standin":      true,
		})
	})
	for _, p := range []string{"/api/jobs", "/api/jobs/{$}"} {
		mux.HandleFunc("GET "+p, d.auth(d.listJobs))
		mux.HandleFunc("POST "+p, d.auth(d.submitJob))
	}
	mux.HandleFunc("GET /api/jobs/{id}", d.auth(d.getJob))
	mux.HandleFunc("DELETE /api/jobs/{id}", d.auth(d.deleteJob))
	mux.HandleFunc("GET /api/jobs/{id}/logs", d.auth(d.jobLogs))
	mux.HandleFunc("POST /api/jobs/{id}/stop", d.auth(d.stopJob))
	for _, p := range []string{"/api/serve/applications", "/api/serve/applications/{$}"} {
		mux.HandleFunc("GET "+p, d.auth(d.serve.get))
		mux.HandleFunc("PUT "+p, d.auth(d.serve.put))
		mux.HandleFunc("DELETE "+p, d.auth(d.serve.delete))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "ray-standin: the dashboard stand-in does not serve this path", http.StatusNotFound)
	})
	return mux
}

func (d *Dashboard) auth(h http.HandlerFunc) http.HandlerFunc {
	if d.token == "" {
		return h
	}
	want := []byte("Bearer " + d.token)
	return func(w http.ResponseWriter, r *http.Request) {
		for _, name := range []string{"X-Ray-Authorization", "Authorization"} {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get(name)), want) == 1 {
				h(w, r)
				return
			}
		}
		http.Error(w, "ray-standin: missing or wrong token (RAY_AUTH_MODE=token): send x-ray-authorization: Bearer <token>", http.StatusUnauthorized)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var he *httpError
	if errors.As(err, &he) {
		http.Error(w, he.msg, he.code)
		return
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

func (d *Dashboard) submitJob(w http.ResponseWriter, r *http.Request) {
	var req dashboard.JobRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&req); err != nil {
		http.Error(w, "invalid job submission request: "+err.Error(), http.StatusBadRequest)
		return
	}
	details, err := d.jobs.submit(req)
	if err != nil {
		writeError(w, err)
		return
	}
	// job_id repeats the submission ID, as Ray's answer does for clients
	// that predate submission IDs.
	writeJSON(w, http.StatusOK, map[string]string{"submission_id": details.SubmissionID, "job_id": details.SubmissionID})
}

func (d *Dashboard) listJobs(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, d.jobs.list())
}

func (d *Dashboard) getJob(w http.ResponseWriter, r *http.Request) {
	details, err := d.jobs.get(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, details)
}

func (d *Dashboard) jobLogs(w http.ResponseWriter, r *http.Request) {
	logs, err := d.jobs.logs(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"logs": logs})
}

func (d *Dashboard) stopJob(w http.ResponseWriter, r *http.Request) {
	stopped, err := d.jobs.stop(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"stopped": stopped})
}

func (d *Dashboard) deleteJob(w http.ResponseWriter, r *http.Request) {
	if err := d.jobs.delete(r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"deleted": true})
}

// serveState is the Serve REST API reduced to bookkeeping. This is the least
// a stand-in can do: it keeps the last config PUT and reports every
// application in it RUNNING and every deployment HEALTHY. Nothing is
// imported, deployed or served, so a RayService smoke test with it shows only
// that the operator's Serve API calls and status handling work.
type serveState struct {
	mu     sync.Mutex
	config map[string]any
	apps   map[string]any
}

func (s *serveState) get(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	apps := s.apps
	if apps == nil {
		apps = map[string]any{}
	}
	reply := map[string]any{"applications": apps, "deploy_mode": "MULTI_APP"}
	for _, k := range []string{"proxy_location", "http_options", "grpc_options"} {
		if v, ok := s.config[k]; ok {
			reply[k] = v
		}
	}
	writeJSON(w, http.StatusOK, reply)
}

func (s *serveState) put(w http.ResponseWriter, r *http.Request) {
	var config map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&config); err != nil {
		http.Error(w, "invalid Serve config: "+err.Error(), http.StatusBadRequest)
		return
	}
	list, ok := config["applications"].([]any)
	if !ok {
		http.Error(w, `invalid Serve config: want an object with an "applications" list`, http.StatusBadRequest)
		return
	}
	now := float64(time.Now().UnixMilli()) / 1000
	apps := map[string]any{}
	for i, item := range list {
		app, ok := item.(map[string]any)
		if !ok {
			http.Error(w, fmt.Sprintf("invalid Serve config: applications[%d] is not an object", i), http.StatusBadRequest)
			return
		}
		name, _ := app["name"].(string)
		if name == "" {
			name = "default"
		}
		if _, dup := apps[name]; dup {
			http.Error(w, fmt.Sprintf("invalid Serve config: application name %q appears twice", name), http.StatusBadRequest)
			return
		}
		routePrefix, _ := app["route_prefix"].(string)
		if routePrefix == "" {
			routePrefix = "/"
		}
		deployments := map[string]any{}
		if ds, ok := app["deployments"].([]any); ok {
			for _, dv := range ds {
				dep, _ := dv.(map[string]any)
				dname, _ := dep["name"].(string)
				if dname == "" {
					continue
				}
				deployments[dname] = map[string]any{
					"name":           dname,
					"status":         "HEALTHY",
					"status_trigger": "CONFIG_UPDATE_COMPLETED",
					"message":        "",
					"route_prefix":   routePrefix,
				}
			}
		}
		apps[name] = map[string]any{
			"name":                 name,
			"route_prefix":         routePrefix,
			"docs_path":            nil,
			"status":               "RUNNING",
			"message":              "",
			"last_deployed_time_s": now,
			"deployed_app_config":  app,
			"deployments":          deployments,
		}
	}
	s.mu.Lock()
	s.config, s.apps = config, apps
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *serveState) delete(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.config, s.apps = nil, nil
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}
