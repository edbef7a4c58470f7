//go:build benchcompare

package benchcompare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard/standin"
	raywrappers "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// useProxy is KubeRay's flag, and Gantry's, that reaches Ray dashboards
// through the API server's services/proxy: the simulated Pods' addresses
// are then reached by the API server, and serveDashboard routes them to
// the stand-in dashboard.
const useProxy = "--use-kubernetes-proxy"

// rayJobPairing is a RayJob's whole life under KubeRay's operator and
// Gantry's: its RayCluster created and Ready, the Ray job submitted over
// HTTP (HTTPMode: the operator itself calls the dashboard, where
// K8sJobMode's submitter Pod would run `ray job submit` and, simulated,
// submit nothing), running to SUCCEEDED, and the cluster deleted when it
// finishes (shutdownAfterJobFinishes, no TTL).
func rayJobPairing() pairing {
	return pairing{
		name: "rayjob", unit: "job", upstream: kuberay().with(useProxy), gantry: gantry("raycluster").with(useProxy), podsPer: 2,
		prepare: serveDashboard,
		create: func(i, _ int) client.Object {
			rj := raywrappers.MakeRayJob(fmt.Sprintf("rj-%05d", i), namespace, "sleep 1").
				Mode(rayv1.HTTPMode).ShutdownAfterJobFinishes(0).Obj()
			rj.UID = ""
			return rj
		},
		phases: []phase{
			{name: "all running", done: func(ctx context.Context, c client.Client, n int) (bool, error) {
				return countRayJobs(ctx, c, n, func(rj *rayv1.RayJob) bool {
					return rj.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusRunning ||
						rj.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusComplete
				})
			}},
			{name: "all complete", done: func(ctx context.Context, c client.Client, n int) (bool, error) {
				return countRayJobs(ctx, c, n, func(rj *rayv1.RayJob) bool {
					return rj.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusComplete &&
						rj.Status.JobStatus == rayv1.JobStatusSucceeded
				})
			}},
			{name: "all clusters gone", done: func(ctx context.Context, c client.Client, _ int) (bool, error) {
				var list rayv1.RayClusterList
				err := c.List(ctx, &list, client.InNamespace(namespace))
				return err == nil && len(list.Items) == 0, err
			}},
		},
	}
}

// countRayJobs reports whether at least n RayJobs satisfy ok; a Failed
// RayJob ends the run, which would otherwise wait for it until its limit.
func countRayJobs(ctx context.Context, c client.Client, n int, ok func(*rayv1.RayJob) bool) (bool, error) {
	var list rayv1.RayJobList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return false, err
	}
	count := 0
	for i := range list.Items {
		rj := &list.Items[i]
		if rj.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusFailed {
			return false, fmt.Errorf("RayJob %s failed: %s: %s", rj.Name, rj.Status.Reason, rj.Status.Message)
		}
		if ok(rj) {
			count++
		}
	}
	return count >= n, nil
}

// dashboardPort is the head's dashboard port, the target of the head
// Service's dashboard port under both operators.
const dashboardPort = 8265

// serveDashboard serves one stand-in Ray dashboard (pkg/ray/dashboard/
// standin: jobs run as `/bin/sh -c` processes here, PENDING → RUNNING →
// SUCCEEDED) on every address of the cluster's simulated Pods: each node's
// Pod CIDR is routed to this machine's loopback (a `local` route), so the
// API server's services/proxy call to a head Pod's address reaches it. The
// jobs of every head share it; their submission IDs keep them apart. It
// needs CAP_NET_ADMIN (root), as the real node does.
func serveDashboard(t *testing.T, cl *cluster) {
	t.Helper()
	jobs := standin.NewJobs("", nil)
	t.Cleanup(jobs.Shutdown)
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", dashboardPort))
	if err != nil {
		t.Fatalf("the stand-in dashboard needs port %d: %v", dashboardPort, err)
	}
	srv := &http.Server{Handler: standin.NewDashboard(jobs, "", "").Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	var nodes corev1.NodeList
	if err := cl.c.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, node := range nodes.Items {
		if len(node.Spec.PodCIDRs) == 0 {
			t.Fatalf("node %s has no Pod CIDR: the stand-in dashboard cannot be routed to", node.Name)
		}
		for _, cidr := range node.Spec.PodCIDRs {
			if out, err := exec.Command("ip", "route", "replace", "local", cidr, "dev", "lo").CombinedOutput(); err != nil {
				t.Fatalf("routing %s to loopback for the stand-in dashboard (needs root): %v: %s", cidr, err, out)
			}
			t.Cleanup(func() {
				if out, err := exec.Command("ip", "route", "del", "local", cidr, "dev", "lo").CombinedOutput(); err != nil &&
					!strings.Contains(string(out), "No such process") {
					t.Errorf("removing the route of %s: %v: %s", cidr, err, out)
				}
			})
		}
	}
	if err := checkDashboard(); err != nil {
		t.Fatal(err)
	}
}

// checkDashboard checks that the stand-in answers on loopback.
func checkDashboard() error {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/version", dashboardPort))
	if err != nil {
		return fmt.Errorf("the stand-in dashboard: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("the stand-in dashboard: /api/version: " + resp.Status)
	}
	return nil
}
