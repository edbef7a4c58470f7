// Package testenv starts a real kube-apiserver + etcd (controller-runtime's
// envtest) with Gantry's CRDs and the JobSet CRD installed, for integration
// tests.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
)

// RepoRoot is the absolute path of the repository checkout.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var jobsetOnce sync.Once
var jobsetDir string
var jobsetErr error

// JobSetCRDDir returns the directory holding the JobSet CRD YAML shipped in
// the sigs.k8s.io/jobset module. GANTRY_JOBSET_CRDS overrides the lookup.
func JobSetCRDDir() (string, error) {
	jobsetOnce.Do(func() {
		if d := os.Getenv("GANTRY_JOBSET_CRDS"); d != "" {
			jobsetDir = d
			return
		}
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/jobset")
		cmd.Dir = RepoRoot()
		out, err := cmd.Output()
		if err != nil {
			jobsetErr = fmt.Errorf("locating the sigs.k8s.io/jobset module: %w", err)
			return
		}
		jobsetDir = filepath.Join(strings.TrimSpace(string(out)), "config", "components", "crd", "bases")
	})
	return jobsetDir, jobsetErr
}

// AssetsDir returns the directory with kube-apiserver and etcd:
// KUBEBUILDER_ASSETS when set, else the repository's bin/ (filled by `make test`).
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	d := filepath.Join(RepoRoot(), "bin")
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(d, b)); err != nil {
			return "", fmt.Errorf("integration tests need kube-apiserver and etcd: run `make test` (it builds them into bin/) or set KUBEBUILDER_ASSETS; missing %s", filepath.Join(d, b))
		}
	}
	return d, nil
}

// Env is a running control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *apiruntime.Scheme
	env    *envtest.Environment
}

// Options tune Start.
type Options struct {
	// AddToScheme registers extra API types (Gantry's APIs, JobSet) on the
	// client's scheme. client-go's built-in types are always registered.
	AddToScheme []func(*apiruntime.Scheme) error
	// WithoutCRDs skips installing CRDs (faster when a test needs only core types).
	WithoutCRDs bool
	// WithoutJobSetCRD installs Gantry's CRDs but not JobSet's, as in a
	// cluster where JobSet is not installed (yet).
	WithoutJobSetCRD bool
}

// Start launches kube-apiserver and etcd, installs the CRDs and stops
// everything when the test finishes. It fails the test (never skips) when the
// binaries are missing, with instructions.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := StartE(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Logf("stopping the test control plane: %v", err)
		}
	})
	return e
}

// StartE is Start for callers without a testing.TB (TestMain, benchmarks
// sharing one control plane). The caller must call Stop.
func StartE(opts Options) (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	scheme := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	for _, add := range opts.AddToScheme {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	if !opts.WithoutCRDs {
		jd, err := JobSetCRDDir()
		if err != nil {
			return nil, err
		}
		if !opts.WithoutJobSetCRD {
			env.CRDDirectoryPaths = []string{jd}
		}
		if gantryCRDs := filepath.Join(RepoRoot(), "config", "crd", "bases"); hasYAML(gantryCRDs) {
			env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, gantryCRDs)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, env: env}, nil
}

// KubeConfig is a kubeconfig for the control plane, for processes (the
// manager binary) that run against it.
func (e *Env) KubeConfig() []byte { return e.env.KubeConfig }

// Stop shuts the control plane down.
func (e *Env) Stop() error { return e.env.Stop() }

// HasResource reports whether the API server serves the given group/version/kind.
func (e *Env) HasResource(gvk schema.GroupVersionKind) bool {
	_, err := e.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

func hasYAML(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	return len(m) > 0
}
