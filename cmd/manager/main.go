// Command manager is the single Gantry operator binary: it runs the Ray,
// Trainer and Slurm workload controllers selected with --controllers.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/controller/ray"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/version"
)

// workloads lists the integrations built into this binary; adding a workload
// is one Register line here.
func workloads() *workload.Registry {
	reg := &workload.Registry{}
	reg.MustRegister(ray.Integration())
	reg.MustRegister(trainjob.Integration())
	reg.MustRegister(slurm.Integration())
	return reg
}

// defaultGCPercent is the garbage collector's target when GOGC is not set:
// the heap may grow to 1.5 times what is live between collections, not 2
// times (Go's default). An operator's live heap is mostly its caches, so
// this takes a quarter off its peak memory for a few more collections
// (docs/benchmarks.md). GOGC in the environment still decides, and the
// chart's GOMEMLIMIT still bounds the heap.
const defaultGCPercent = 50

// setGCDefault applies defaultGCPercent unless GOGC is set.
func setGCDefault() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

func main() {
	setGCDefault()
	reg := workloads()
	opts, err := app.ParseFlags(os.Args[1:], reg)
	if errors.Is(err, pflag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gantry-manager:", err)
		os.Exit(2)
	}
	if opts.ShowVersion {
		fmt.Println("gantry-manager", version.Version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.Zap)))
	cfg, err := restConfig(opts.Kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gantry-manager: no Kubernetes configuration:", err)
		os.Exit(1)
	}
	if err := app.Run(ctrl.SetupSignalHandler(), cfg, opts, reg); err != nil {
		ctrl.Log.Error(err, "manager exited with an error")
		os.Exit(1)
	}
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}
