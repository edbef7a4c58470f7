// Package bench measures Gantry's controllers against a real kube-apiserver:
// time to converge, API writes per object and the manager's memory.
// Run with `make bench` (GANTRY_BENCH_N sets the object count).
package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
)

// StartManager runs the Gantry manager in-process with the given
// integrations, counting its writes. Stop it by cancelling ctx.
func StartManager(ctx context.Context, cfg *rest.Config, reg *workload.Registry, counter *testenv.WriteCounter) (<-chan error, error) {
	opts, err := app.ParseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0"}, reg)
	if err != nil {
		return nil, err
	}
	ctrl.SetLogger(logr.Discard())
	done := make(chan error, 1)
	go func() {
		err := app.Run(ctx, counter.Wrap(cfg), opts, reg)
		if err != nil && ctx.Err() == nil {
			// A benchmark waiting for objects would otherwise wait out its
			// whole timeout for a manager that is gone.
			fmt.Fprintln(os.Stderr, "bench: the manager stopped:", err)
		}
		done <- err
	}()
	return done, nil
}

// N is the benchmark's object count: GANTRY_BENCH_N, default def.
func N(def int) int { return EnvPositive("GANTRY_BENCH_N", def) }

// EnvPositive is the positive integer the environment variable name holds,
// or def when it is unset or holds anything else.
func EnvPositive(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// PeakRSSMiB is this process's peak resident set (VmHWM), in MiB.
func PeakRSSMiB() float64 { return testenv.VmHWMMiB("/proc/self/status") }

// HeapInuseMiB is the Go heap in use after a GC, in MiB.
func HeapInuseMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// Poll calls cond every interval until it is true or timeout passes.
func Poll(interval, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return context.DeadlineExceeded
		}
		time.Sleep(interval)
	}
}

// LogWrites logs the manager's writes by verb and resource, with the count
// per benchmarked object (unit names the object: "cluster", "pod").
func LogWrites(b testing.TB, counter *testenv.WriteCounter, n int, unit string) {
	b.Helper()
	byVerb := counter.ByVerb()
	keys := make([]string, 0, len(byVerb))
	for k := range byVerb {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.Logf("%-40s %6d (%.2f per %s)", k, byVerb[k], float64(byVerb[k])/float64(n), unit)
	}
}

// startCPUProfile profiles this process's CPU into the file
// GANTRY_BENCH_CPUPROFILE names, until the returned stop is called; with
// the variable unset it does nothing. go test's -cpuprofile covers the
// whole benchmark, setup included; this covers only the part measured.
func startCPUProfile(b testing.TB) (stop func()) {
	b.Helper()
	path := os.Getenv("GANTRY_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}
