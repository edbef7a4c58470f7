//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/test/testenv"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

const (
	// converge is how long a workload may take to converge after the
	// last fault.
	converge = 5 * time.Minute
	workers  = 3
)

// rayClusters is the RayCluster half of a scenario: n clusters of one
// head and three workers, created at a pace while the faults happen.
type rayClusters struct {
	c  client.Client
	ns string
	n  int

	mu         sync.Mutex
	violations []string
}

func (w *rayClusters) create(t *testing.T, pace time.Duration, midway func()) {
	t.Helper()
	for i := 0; i < w.n; i++ {
		rc := raytesting.MakeRayCluster(fmt.Sprintf("rc-%03d", i), w.ns).WorkerGroup("cpu", workers).Obj()
		rc.UID = ""
		if err := w.c.Create(context.Background(), rc); err != nil {
			t.Fatal(err)
		}
		if i == w.n/2 && midway != nil {
			midway()
		}
		time.Sleep(pace)
	}
}

// clusterPods lists the live (not terminating) pods of the namespace by
// the cluster their controller owner reference names, and the pods no
// RayCluster controls.
func (w *rayClusters) clusterPods(ctx context.Context) (map[types.UID][]corev1.Pod, []string, error) {
	var pods corev1.PodList
	if err := w.c.List(ctx, &pods, client.InNamespace(w.ns)); err != nil {
		return nil, nil, err
	}
	by := map[types.UID][]corev1.Pod{}
	var orphans []string
	for _, p := range pods.Items {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		owner := metav1.GetControllerOfNoCopy(&p)
		if owner == nil || owner.Kind != rayv1.RayClusterKind {
			orphans = append(orphans, p.Name)
			continue
		}
		by[owner.UID] = append(by[owner.UID], p)
	}
	return by, orphans, nil
}

func readyPods(pods []corev1.Pod, nodeType string) int {
	n := 0
	for _, p := range pods {
		if p.Labels[rayv1.RayNodeTypeLabelKey] != nodeType || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

func count(pods []corev1.Pod, nodeType string) int {
	n := 0
	for _, p := range pods {
		if p.Labels[rayv1.RayNodeTypeLabelKey] == nodeType {
			n++
		}
	}
	return n
}

// watchStatus checks, until ctx ends, that no RayCluster's status claims
// more than is so: ready workers never exceed the ready worker pods, and
// "ready" only with every pod ready. Clusters are read before pods, and
// pods only ever become ready here, so a true status never fails it.
func (w *rayClusters) watchStatus(ctx context.Context) {
	go func() {
		for ctx.Err() == nil {
			var list rayv1.RayClusterList
			if err := w.c.List(ctx, &list, client.InNamespace(w.ns)); err == nil {
				if by, _, err := w.clusterPods(ctx); err == nil {
					for _, rc := range list.Items {
						pods := by[rc.UID]
						readyWorkers := readyPods(pods, "worker")
						switch {
						case rc.Status.ReadyWorkerReplicas > int32(readyWorkers):
							w.violate("%s: status.readyWorkerReplicas=%d with %d ready worker pods", rc.Name, rc.Status.ReadyWorkerReplicas, readyWorkers)
						case rc.Status.State == rayv1.Ready && (readyPods(pods, "head") != 1 || readyWorkers < workers):
							w.violate("%s: state ready with %d ready head and %d ready worker pods", rc.Name, readyPods(pods, "head"), readyWorkers)
						}
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
}

func (w *rayClusters) violate(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.violations) < 20 {
		w.violations = append(w.violations, fmt.Sprintf(format, args...))
	}
}

// converged reports nil once every cluster has exactly one head and three
// workers, all ready, its state is ready, and no pod lacks a RayCluster
// controller; otherwise what is still off.
func (w *rayClusters) converged(ctx context.Context) error {
	var list rayv1.RayClusterList
	if err := w.c.List(ctx, &list, client.InNamespace(w.ns)); err != nil {
		return err
	}
	if len(list.Items) != w.n {
		return fmt.Errorf("%d RayClusters, want %d", len(list.Items), w.n)
	}
	by, orphans, err := w.clusterPods(ctx)
	if err != nil {
		return err
	}
	if len(orphans) > 0 {
		return fmt.Errorf("pods without a RayCluster controller: %v", orphans)
	}
	for _, rc := range list.Items {
		pods := by[rc.UID]
		if count(pods, "head") != 1 || count(pods, "worker") != workers {
			return fmt.Errorf("%s has %d heads and %d workers", rc.Name, count(pods, "head"), count(pods, "worker"))
		}
		if rc.Status.State != rayv1.Ready {
			return fmt.Errorf("%s is %q, not ready", rc.Name, rc.Status.State)
		}
	}
	return nil
}

// tally counts, in the final state, pods beyond one head and three workers
// per cluster, and pods no RayCluster controls.
func (w *rayClusters) tally(t *testing.T) (duplicates, orphans int) {
	t.Helper()
	by, orphaned, err := w.clusterPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, pods := range by {
		duplicates += max(0, count(pods, "head")-1) + max(0, count(pods, "worker")-workers)
	}
	return duplicates, len(orphaned)
}

// trainJobs is the TrainJob half of a scenario: n jobs, every other one
// on the MPI runtime, whose SSH Secret must be made once.
type trainJobs struct {
	c  client.Client
	ns string
	n  int

	mu         sync.Mutex
	violations []string
}

// installRuntimes installs shipped ClusterTrainingRuntimes (config/runtimes
// files), torch-distributed and mpi-distributed when none are named.
func installRuntimes(t *testing.T, c client.Client, files ...string) {
	t.Helper()
	if len(files) == 0 {
		files = []string{"torch_distributed.yaml", "mpi_distributed.yaml"}
	}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "runtimes", f))
		if err != nil {
			t.Fatal(err)
		}
		rt := &trainer.ClusterTrainingRuntime{}
		if err := yaml.UnmarshalStrict(raw, rt); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(context.Background(), rt); err != nil {
			t.Fatal(err)
		}
	}
}

func (w *trainJobs) mpi(i int) bool { return i%2 == 1 }

func (w *trainJobs) create(t *testing.T, pace time.Duration) {
	t.Helper()
	for i := 0; i < w.n; i++ {
		runtime := "torch-distributed"
		if w.mpi(i) {
			runtime = "mpi-distributed"
		}
		tj := trainertesting.MakeTrainJob(fmt.Sprintf("tj-%03d", i), w.ns).RuntimeRef(trainer.ClusterTrainingRuntimeKind, runtime).NumNodes(2).Obj()
		tj.UID = ""
		if err := w.c.Create(context.Background(), tj); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pace)
	}
}

// watchStatus checks, until ctx ends, that no TrainJob claims to have
// finished: no JobSet controller runs, so none can.
func (w *trainJobs) watchStatus(ctx context.Context) {
	go func() {
		for ctx.Err() == nil {
			var list trainer.TrainJobList
			if err := w.c.List(ctx, &list, client.InNamespace(w.ns)); err == nil {
				for _, tj := range list.Items {
					for _, cond := range []string{trainer.TrainJobComplete, trainer.TrainJobFailed} {
						if c := meta.FindStatusCondition(tj.Status.Conditions, cond); c != nil && c.Status == metav1.ConditionTrue {
							w.mu.Lock()
							if len(w.violations) < 20 {
								w.violations = append(w.violations, fmt.Sprintf("%s: %s=True (%s: %s) with no JobSet controller", tj.Name, cond, c.Reason, c.Message))
							}
							w.mu.Unlock()
						}
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
}

// converged reports nil once every TrainJob has exactly one JobSet, and
// every MPI job exactly one SSH Secret.
func (w *trainJobs) converged(ctx context.Context) error {
	var jobs trainer.TrainJobList
	if err := w.c.List(ctx, &jobs, client.InNamespace(w.ns)); err != nil {
		return err
	}
	var sets jobsetv1alpha2.JobSetList
	if err := w.c.List(ctx, &sets, client.InNamespace(w.ns)); err != nil {
		return err
	}
	var secrets corev1.SecretList
	if err := w.c.List(ctx, &secrets, client.InNamespace(w.ns)); err != nil {
		return err
	}
	owned := func(obj client.Object) types.UID {
		if o := metav1.GetControllerOfNoCopy(obj); o != nil && o.Kind == trainer.TrainJobKind {
			return o.UID
		}
		return ""
	}
	jobSets, sshSecrets := map[types.UID]int{}, map[types.UID]int{}
	for i := range sets.Items {
		jobSets[owned(&sets.Items[i])]++
	}
	for i := range secrets.Items {
		if uid := owned(&secrets.Items[i]); uid != "" {
			sshSecrets[uid]++
		}
	}
	if len(jobs.Items) != w.n || len(sets.Items) != w.n {
		return fmt.Errorf("%d TrainJobs and %d JobSets, want %d each", len(jobs.Items), len(sets.Items), w.n)
	}
	if jobSets[""] > 0 {
		return fmt.Errorf("%d JobSets without a TrainJob controller", jobSets[""])
	}
	for i, tj := range jobs.Items {
		if jobSets[tj.UID] != 1 {
			return fmt.Errorf("%s has %d JobSets", tj.Name, jobSets[tj.UID])
		}
		want := 0
		if tj.Spec.RuntimeRef.Name == "mpi-distributed" {
			want = 1
		}
		if sshSecrets[tj.UID] != want {
			return fmt.Errorf("%s (%d) has %d Secrets, want %d", tj.Name, i, sshSecrets[tj.UID], want)
		}
	}
	return nil
}

// jobSets counts the JobSets of the namespace.
func (w *trainJobs) jobSets(t *testing.T) int {
	t.Helper()
	var sets jobsetv1alpha2.JobSetList
	if err := w.c.List(context.Background(), &sets, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	return len(sets.Items)
}

// waitConverged polls check until it reports nil, for at most converge.
func waitConverged(t *testing.T, what string, check func(context.Context) error) time.Duration {
	t.Helper()
	start := time.Now()
	var last error
	for time.Since(start) < converge {
		if last = check(context.Background()); last == nil {
			return time.Since(start)
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("%s did not converge in %s: %v", what, converge, last)
	return 0
}
