package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

func probeCommand(p *corev1.Probe) string {
	if p == nil || p.Exec == nil {
		return ""
	}
	return strings.Join(p.Exec.Command, " ")
}

func TestDefaultProbes(t *testing.T) {
	userProbe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}, PeriodSeconds: 42}
	tests := []struct {
		name             string
		build            func(opts BuildOptions) *corev1.Container
		inject           bool
		wantLiveness     []string // substrings of the exec command; nil = no probe
		wantReadiness    []string
		wantLivenessUser bool
		wantTimeout      int32
		wantReadyFailure int32
	}{
		{
			name: "head checks raylet and GCS",
			build: func(opts BuildOptions) *corev1.Container {
				return &BuildHeadPod(raytesting.MakeRayCluster("rc", "default").Obj(), opts).Spec.Containers[0]
			},
			inject:           true,
			wantLiveness:     []string{"http://localhost:52365/api/local_raylet_healthz", "http://localhost:8265/api/gcs_healthz"},
			wantReadiness:    []string{"http://localhost:52365/api/local_raylet_healthz", "http://localhost:8265/api/gcs_healthz"},
			wantTimeout:      5,
			wantReadyFailure: 10,
		},
		{
			name: "worker checks the raylet on a custom agent port",
			build: func(opts BuildOptions) *corev1.Container {
				w := raytesting.MakeRayCluster("rc", "default").WorkerGroup("cpu", 1).WorkerStartParam("cpu", "dashboard-agent-listen-port", "6000")
				return &BuildWorkerPod(w.Obj(), w.Group("cpu"), WorkerReplica{}, opts).Spec.Containers[0]
			},
			inject:           true,
			wantLiveness:     []string{"http://localhost:6000/api/local_raylet_healthz"},
			wantReadiness:    []string{"http://localhost:6000/api/local_raylet_healthz"},
			wantTimeout:      2,
			wantReadyFailure: 10,
		},
		{
			name: "RayService worker readiness also checks the Serve proxy",
			build: func(opts BuildOptions) *corev1.Container {
				w := raytesting.MakeRayCluster("rc", "default").Label(rayv1.RayOriginatedFromCRDLabelKey, "RayService").WorkerGroup("cpu", 1)
				return &BuildWorkerPod(w.Obj(), w.Group("cpu"), WorkerReplica{}, opts).Spec.Containers[0]
			},
			inject:           true,
			wantLiveness:     []string{"api/local_raylet_healthz"},
			wantReadiness:    []string{"api/local_raylet_healthz", "http://localhost:8000/-/healthz"},
			wantTimeout:      2,
			wantReadyFailure: 1,
		},
		{
			name: "a user liveness probe is kept and readiness still defaulted",
			build: func(opts BuildOptions) *corev1.Container {
				w := raytesting.MakeRayCluster("rc", "default")
				w.Spec.HeadGroupSpec.Template.Spec.Containers[0].LivenessProbe = userProbe.DeepCopy()
				return &BuildHeadPod(w.Obj(), opts).Spec.Containers[0]
			},
			inject:           true,
			wantLivenessUser: true,
			wantReadiness:    []string{"api/gcs_healthz"},
			wantReadyFailure: 10,
		},
		{
			name: "injection off",
			build: func(opts BuildOptions) *corev1.Container {
				return &BuildHeadPod(raytesting.MakeRayCluster("rc", "default").Obj(), opts).Spec.Containers[0]
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultBuildOptions()
			opts.InjectProbes = tc.inject
			c := tc.build(opts)

			switch {
			case tc.wantLivenessUser:
				if c.LivenessProbe == nil || c.LivenessProbe.TCPSocket == nil || c.LivenessProbe.PeriodSeconds != 42 {
					t.Errorf("user liveness probe changed: %+v", c.LivenessProbe)
				}
			case tc.wantLiveness == nil:
				if c.LivenessProbe != nil {
					t.Errorf("unexpected liveness probe %+v", c.LivenessProbe)
				}
			default:
				cmd := probeCommand(c.LivenessProbe)
				for _, part := range tc.wantLiveness {
					if !strings.Contains(cmd, part) {
						t.Errorf("liveness %q lacks %q", cmd, part)
					}
				}
				if c.LivenessProbe.TimeoutSeconds != tc.wantTimeout || c.LivenessProbe.FailureThreshold != 120 || c.LivenessProbe.InitialDelaySeconds != 30 {
					t.Errorf("liveness timings = %+v", c.LivenessProbe)
				}
			}
			if tc.wantReadiness == nil {
				if c.ReadinessProbe != nil {
					t.Errorf("unexpected readiness probe %+v", c.ReadinessProbe)
				}
				return
			}
			cmd := probeCommand(c.ReadinessProbe)
			for _, part := range tc.wantReadiness {
				if !strings.Contains(cmd, part) {
					t.Errorf("readiness %q lacks %q", cmd, part)
				}
			}
			if c.ReadinessProbe.FailureThreshold != tc.wantReadyFailure {
				t.Errorf("readiness failureThreshold = %d, want %d", c.ReadinessProbe.FailureThreshold, tc.wantReadyFailure)
			}
		})
	}
}

func TestProbeSettingsFromOptions(t *testing.T) {
	opts := DefaultBuildOptions()
	opts.Probes.LivenessFailureThreshold = 7
	opts.Probes.ReadinessPeriodSeconds = 11
	c := BuildHeadPod(raytesting.MakeRayCluster("rc", "default").Obj(), opts).Spec.Containers[0]
	if c.LivenessProbe.FailureThreshold != 7 || c.ReadinessProbe.PeriodSeconds != 11 {
		t.Errorf("probes ignore configured settings: liveness %+v readiness %+v", c.LivenessProbe, c.ReadinessProbe)
	}
}

// TestHTTPProbesFromRay253: from Ray 2.53.0 the default probes are one HTTP
// GET of the dashboard agent's /api/healthz, as in KubeRay v1.6
// (common/pod.go initLivenessAndReadinessProbe); a RayService worker's
// readiness keeps the exec check, which adds the Serve proxy.
func TestHTTPProbesFromRay253(t *testing.T) {
	head := func(version string) *corev1.Container {
		return &BuildHeadPod(raytesting.MakeRayCluster("rc", "default").RayVersion(version).Obj(), DefaultBuildOptions()).Spec.Containers[0]
	}
	worker := func(version string, edit func(*raytesting.RayClusterWrapper) *raytesting.RayClusterWrapper) *corev1.Container {
		w := edit(raytesting.MakeRayCluster("rc", "default").RayVersion(version).WorkerGroup("cpu", 1))
		return &BuildWorkerPod(w.Obj(), w.Group("cpu"), WorkerReplica{}, DefaultBuildOptions()).Spec.Containers[0]
	}
	httpGet := func(t *testing.T, what string, p *corev1.Probe, port int32) {
		t.Helper()
		if p == nil || p.HTTPGet == nil || p.Exec != nil {
			t.Fatalf("%s: want an HTTP GET probe only, got %+v", what, p)
		}
		if p.HTTPGet.Path != "/api/healthz" || p.HTTPGet.Port.IntValue() != int(port) {
			t.Errorf("%s: GET %s on port %s, want /api/healthz on %d", what, p.HTTPGet.Path, p.HTTPGet.Port.String(), port)
		}
	}

	for _, v := range []string{"2.53.0", "2.54.1", "3.0.0"} {
		c := head(v)
		httpGet(t, v+" head liveness", c.LivenessProbe, 52365)
		httpGet(t, v+" head readiness", c.ReadinessProbe, 52365)
		if c.LivenessProbe.TimeoutSeconds != 5 || c.ReadinessProbe.FailureThreshold != 10 {
			t.Errorf("%s: timings changed: %+v %+v", v, c.LivenessProbe, c.ReadinessProbe)
		}
	}
	c := worker("2.53.0", func(w *raytesting.RayClusterWrapper) *raytesting.RayClusterWrapper {
		return w.WorkerStartParam("cpu", "dashboard-agent-listen-port", "6000")
	})
	httpGet(t, "worker liveness", c.LivenessProbe, 6000)
	httpGet(t, "worker readiness", c.ReadinessProbe, 6000)

	c = worker("2.53.0", func(w *raytesting.RayClusterWrapper) *raytesting.RayClusterWrapper {
		return w.Label(rayv1.RayOriginatedFromCRDLabelKey, "RayService")
	})
	httpGet(t, "RayService worker liveness", c.LivenessProbe, 52365)
	if cmd := probeCommand(c.ReadinessProbe); c.ReadinessProbe.HTTPGet != nil || !strings.Contains(cmd, "-/healthz") || !strings.Contains(cmd, "api/local_raylet_healthz") {
		t.Errorf("RayService worker readiness = %+v, want the exec check of the raylet and the Serve proxy", c.ReadinessProbe)
	}

	for _, v := range []string{"2.52.1", "2.46.0", "latest", ""} {
		if c := head(v); c.LivenessProbe.HTTPGet != nil || probeCommand(c.ReadinessProbe) == "" {
			t.Errorf("rayVersion %q: want the exec probes, got %+v", v, c.ReadinessProbe)
		}
	}
}
