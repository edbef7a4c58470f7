package podspec

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/version"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// ProbeSettings are the timings of the default probes. KubeRay hard-codes
// them; Gantry reads them from the manager's configuration, with
// DefaultProbeSettings as the default.
type ProbeSettings struct {
	LivenessInitialDelaySeconds      int32
	LivenessTimeoutSeconds           int32
	HeadLivenessTimeoutSeconds       int32
	LivenessPeriodSeconds            int32
	LivenessSuccessThreshold         int32
	LivenessFailureThreshold         int32
	ReadinessInitialDelaySeconds     int32
	ReadinessTimeoutSeconds          int32
	HeadReadinessTimeoutSeconds      int32
	ReadinessPeriodSeconds           int32
	ReadinessSuccessThreshold        int32
	ReadinessFailureThreshold        int32
	ServeWorkerReadinessFailureLimit int32
}

// DefaultProbeSettings are KubeRay's values. The head gets longer timeouts
// because its probe queries two endpoints.
func DefaultProbeSettings() ProbeSettings {
	return ProbeSettings{
		LivenessInitialDelaySeconds:      30,
		LivenessTimeoutSeconds:           2,
		HeadLivenessTimeoutSeconds:       5,
		LivenessPeriodSeconds:            5,
		LivenessSuccessThreshold:         1,
		LivenessFailureThreshold:         120,
		ReadinessInitialDelaySeconds:     10,
		ReadinessTimeoutSeconds:          2,
		HeadReadinessTimeoutSeconds:      5,
		ReadinessPeriodSeconds:           5,
		ReadinessSuccessThreshold:        1,
		ReadinessFailureThreshold:        10,
		ServeWorkerReadinessFailureLimit: 1,
	}
}

// Health endpoints. The raylet and the dashboard agent share fate, so the
// agent's endpoint stands for the raylet.
const (
	rayletHealthPath     = "api/local_raylet_healthz"
	gcsHealthPath        = "api/gcs_healthz"
	serveProxyHealthPath = "-/healthz"
)

func wgetHealthCommand(timeoutSeconds int32, port int32, path string) string {
	return fmt.Sprintf("wget --tries 1 -T %d -q -O- http://localhost:%d/%s | grep success", timeoutSeconds, port, path)
}

// setDefaultProbes adds liveness and readiness probes to the Ray container
// only where the user set none: a user probe is never changed. The head
// checks raylet and GCS, workers the raylet; RayService workers must also
// have a healthy Serve proxy to receive traffic.
//
// From Ray 2.53.0 (rayVersion) a node answers one HTTP health endpoint for
// all of that, /api/healthz on the dashboard agent, and the probes GET it
// instead of running wget in the container, as KubeRay 1.6 does.
func setDefaultProbes(c *corev1.Container, nodeType rayv1.RayNodeType, params map[string]string, creator, rayVersion string, s ProbeSettings) {
	agentPort := portParam(params, paramDashboardAgentListenPort, DefaultDashboardAgentListenPort)
	checks := []string{wgetHealthCommand(s.ReadinessTimeoutSeconds, agentPort, rayletHealthPath)}
	if nodeType == rayv1.HeadNode {
		dashboardPort := portParam(params, paramDashboardPort, DefaultDashboardPort)
		checks = append(checks, wgetHealthCommand(s.ReadinessFailureThreshold, dashboardPort, gcsHealthPath))
	}
	exec := func(cmds []string) corev1.ProbeHandler {
		return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"bash", "-c", strings.Join(cmds, " && ")}}}
	}
	handler := exec(checks)
	if hasUnifiedHealthCheck(rayVersion) {
		handler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: nodeHealthPath, Port: intstr.FromInt32(agentPort)}}
	}

	if c.LivenessProbe == nil {
		timeout := s.LivenessTimeoutSeconds
		if nodeType == rayv1.HeadNode {
			timeout = s.HeadLivenessTimeoutSeconds
		}
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler:        handler,
			InitialDelaySeconds: s.LivenessInitialDelaySeconds,
			TimeoutSeconds:      timeout,
			PeriodSeconds:       s.LivenessPeriodSeconds,
			SuccessThreshold:    s.LivenessSuccessThreshold,
			FailureThreshold:    s.LivenessFailureThreshold,
		}
	}
	if c.ReadinessProbe == nil {
		timeout := s.ReadinessTimeoutSeconds
		if nodeType == rayv1.HeadNode {
			timeout = s.HeadReadinessTimeoutSeconds
		}
		readiness := handler
		failureThreshold := s.ReadinessFailureThreshold
		if creator == "RayService" && nodeType == rayv1.WorkerNode {
			// The head's proxy is checked by the RayService controller
			// instead, so that the head keeps serving the dashboard.
			servePort := containerPort(c, ServingPortName, DefaultServingPort)
			readiness = exec(append(checks[:len(checks):len(checks)], wgetHealthCommand(s.ReadinessInitialDelaySeconds, servePort, serveProxyHealthPath)))
			failureThreshold = s.ServeWorkerReadinessFailureLimit
		}
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:        readiness,
			InitialDelaySeconds: s.ReadinessInitialDelaySeconds,
			TimeoutSeconds:      timeout,
			PeriodSeconds:       s.ReadinessPeriodSeconds,
			SuccessThreshold:    s.ReadinessSuccessThreshold,
			FailureThreshold:    failureThreshold,
		}
	}
}

// nodeHealthPath is the one health endpoint of a Ray node from 2.53.0.
const nodeHealthPath = "/api/healthz"

// unifiedHealthCheckVersion is the first Ray release with nodeHealthPath.
var unifiedHealthCheckVersion = version.MustParseGeneric("2.53.0")

// hasUnifiedHealthCheck: rayVersion parses and is at least 2.53.0.
func hasUnifiedHealthCheck(rayVersion string) bool {
	v, err := version.ParseGeneric(rayVersion)
	return err == nil && v.AtLeast(unifiedHealthCheckVersion)
}

func portParam(params map[string]string, key string, def int32) int32 {
	if v, ok := params[key]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			return int32(n)
		}
	}
	return def
}

func containerPort(c *corev1.Container, name string, def int32) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return def
}
