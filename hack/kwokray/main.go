// Command kwokray stands in for Ray on the heads that kwok's simulated
// nodes "run" in `make run`, so that RayJobs and RayServices on those nodes
// reach their end states as TrainJobs do. kwok marks a Pod Running and
// Ready without running its containers; a RayJob's operator then calls the
// head's dashboard, which nothing serves. For every Ray head Pod on a kwok
// node this program:
//
//   - routes the Pod's IP to this machine (`ip route add local IP/32 dev
//     lo`, protocol 77, so the routes are found and removed again), which
//     makes the address local: the API server's services/proxy and
//     pods/proxy calls (the manager runs with --use-kubernetes-proxy), and
//     an in-cluster manager's calls through the head Service, reach it;
//   - serves a stand-in dashboard on IP:<dashboard port> (the Jobs and
//     Serve APIs of pkg/ray/dashboard/standin), one per head, with jobs
//     simulated, never run: RUNNING at once, then SUCCEEDED after 3 s, or as
//     the RayJob's annotations gantry.dev/kwok-run-seconds and
//     gantry.dev/kwok-exit-code say (kwok's Pod annotations, hack/kwok);
//   - answers the Serve proxy's health check on IP:<serve port>;
//   - acts as the submitter of the RayJob (K8sJobMode: the submitter Job's
//     Pod, once Running on a kwok node; SidecarMode: the head Pod's
//     submitter container) by submitting the RayJob's entrypoint to the
//     head's dashboard under its submission ID, as `ray job submit` would;
//     the submitter then runs until the Ray job ends, as `ray job submit`
//     does: kwok leaves RayJob submitter Pods running (hack/kwok/stages.yaml)
//     until this program annotates them to finish, and ends a head's
//     submitter container once this program annotates the head.
//
// Heads on real nodes are left alone. It needs CAP_NET_ADMIN (root), as the
// real node does; `make run` starts it where it can, and says why not where
// it cannot. With --flush-routes it only removes the routes a previous run
// left and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// routeProto marks the routes this program adds (`ip route ... proto 77`).
const routeProto = "77"

func main() {
	// --kubeconfig is controller-runtime's flag (ctrl.GetConfig).
	flush := flag.Bool("flush-routes", false, "only remove the routes a previous run left, and exit")
	flag.Parse()
	ctrl.SetLogger(zap.New())
	if *flush {
		if err := (ipNetwork{}).flush(); err != nil {
			fmt.Fprintln(os.Stderr, "kwokray:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kwokray:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := rayv1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	routes := ipNetwork{}
	if err := routes.flush(); err != nil {
		return err
	}
	s := newStandIns(mgr.GetClient(), routes, ctrl.Log.WithName("kwokray"))
	if err := s.setupWithManager(mgr); err != nil {
		return err
	}
	// The line hack/local-cluster.sh waits for.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			fmt.Fprintln(os.Stderr, "kwokray: ready: serving a stand-in Ray dashboard for every Ray head on a kwok node")
		}
		return nil
	})); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	err = mgr.Start(ctx)
	s.stopAll()
	if ferr := routes.flush(); ferr != nil && err == nil {
		err = ferr
	}
	return err
}

// ipNetwork changes this machine's routes with iproute2.
type ipNetwork struct{}

func (ipNetwork) ip(args ...string) error {
	out, err := exec.CommandContext(context.Background(), "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n ipNetwork) addLocal(ip string) error {
	return n.ip("route", "replace", "local", ip+"/32", "dev", "lo", "proto", routeProto)
}

func (n ipNetwork) delLocal(ip string) error {
	err := n.ip("route", "del", "local", ip+"/32", "dev", "lo", "proto", routeProto)
	if err != nil && strings.Contains(err.Error(), "No such process") {
		return nil
	}
	return err
}

func (n ipNetwork) flush() error {
	return n.ip("route", "flush", "table", "local", "proto", routeProto)
}
