package slinky_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// repoRoot is Gantry's repository root (this file is three levels below).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// renderDir is the module of Slinky's side (slinkyrender/).
func renderDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "test", "oracle", "slinky", "slinkyrender")
}

// slinkyModuleDir is where Go keeps the slurm-operator module slinkyrender
// builds with: its CRDs are what Slinky's API server stores objects by.
func slinkyModuleDir(t *testing.T) string {
	t.Helper()
	// go mod download, not go list: on a fresh machine nothing has put the
	// module in the cache yet, and download does (at the version go.mod
	// pins) and says where.
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/SlinkyProject/slurm-operator")
	cmd.Dir = renderDir(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download github.com/SlinkyProject/slurm-operator (in slinkyrender): %v\n%s", err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download github.com/SlinkyProject/slurm-operator (in slinkyrender) gave no directory: %v %s\n%s", err, mod.Error, out)
	}
	return mod.Dir
}

var (
	renderOnce sync.Once
	renderBin  string
	renderErr  error
)

// TestMain removes the slinkyrender binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if renderBin != "" {
		_ = os.RemoveAll(filepath.Dir(renderBin))
	}
	os.Exit(code)
}

// slinkyRenderer builds slinkyrender once per test binary.
func slinkyRenderer(t *testing.T) string {
	t.Helper()
	renderOnce.Do(func() {
		dir, err := os.MkdirTemp("", "slinkyrender")
		if err != nil {
			renderErr = err
			return
		}
		renderBin = filepath.Join(dir, "slinkyrender")
		cmd := exec.Command("go", "build", "-o", renderBin, ".")
		cmd.Dir = renderDir(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			renderErr = fmt.Errorf("building slinkyrender: %v\n%s", err, out)
		}
	})
	if renderErr != nil {
		t.Fatal(renderErr)
	}
	return renderBin
}

// renderPod is one slurmd pod a case asks both sides for.
type renderPod struct {
	NodeSet  string `json:"nodeSet"`
	Ordinal  int    `json:"ordinal"`
	Node     string `json:"node,omitempty"`
	Revision string `json:"revision"`
}

type renderCase struct {
	Name     string           `json:"name"`
	Objects  []map[string]any `json:"objects"`
	Pods     []renderPod      `json:"pods"`
	HostKeys bool             `json:"hostKeys"`
}

type renderResult struct {
	Name    string                    `json:"name"`
	Objects map[string]map[string]any `json:"objects"`
	Errors  map[string]string         `json:"errors"`
}

// renderSlinky runs Slinky's builders (slinkyrender) on every case at once.
func renderSlinky(t *testing.T, cases []renderCase) map[string]renderResult {
	t.Helper()
	in, err := json.Marshal(map[string]any{"cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(slinkyRenderer(t))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("slinkyrender: %v\n%s", err, stderr.String())
	}
	var results []renderResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("slinkyrender's output: %v", err)
	}
	byName := map[string]renderResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	return byName
}
