//go:build chaos

package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	slurmworkload "github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/test/testenv"
)

const (
	objects = 100
	kills   = 20
	// faultNodeSetPods is the NodeSet's size under API faults.
	faultNodeSetPods = 50
)

// TestKillRayClusters: 100 RayClusters (1 head + 3 workers) are created
// while the manager is killed with SIGKILL 20 times and restarted each
// time. Afterwards: exactly one head and three workers per cluster, every
// cluster ready, no pod without an owner, and no status that ever claimed
// more than was so. Extra pod creates are counted by the API server.
func TestKillRayClusters(t *testing.T) {
	r := seed(t)
	env := startControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &rayClusters{c: env.Client, ns: namespace(t, env.Client, "ray-kills"), n: objects}
	made := watchCreations(ctx, t, env, w.ns)
	kubelet(ctx, env.Client, w.ns)
	w.watchStatus(ctx)
	m := newManagers(t, testenv.ChartKubeconfig(t, env), "--controllers", raycluster.Name)

	start := time.Now()
	killed := m.killer(ctx, r, m.start(), kills, 300*time.Millisecond, 1500*time.Millisecond)
	w.create(t, 50*time.Millisecond, nil)
	n := <-killed
	lastKill := time.Now()
	after := waitConverged(t, "RayClusters", w.converged)

	rep := &report{scenario: "RayCluster kills"}
	rep.add("clusters", "%d", objects)
	rep.add("kills", "%d", n)
	podsMade(t, rep, env, made)
	rep.add("pods deleted", "%d", requests(t, env, "DELETE", "pods", ""))
	dups, orphans := w.tally(t)
	rep.add("duplicates", "%d", dups)
	rep.add("orphans", "%d", orphans)
	rep.add("false statuses", "%d", len(w.violations))
	rep.add("converged after last kill", "%s", after.Round(100*time.Millisecond))
	rep.add("total", "%s", (lastKill.Sub(start) + after).Round(100*time.Millisecond))
	rep.print(t)
	if extra := made.count() - objects*(1+workers); extra != 0 {
		t.Errorf("%d extra pod creates", extra)
	}
	if len(w.violations) > 0 {
		t.Errorf("statuses claimed what was not so:\n%s", strings.Join(w.violations, "\n"))
	}
}

// podsMade reports the pods made, as the watch saw them and as the API
// server's request counter has them.
func podsMade(t *testing.T, rep *report, env *testenv.Env, made *creations) {
	want := objects * (1 + workers)
	rep.add("pods created", "%d (want %d)", made.count(), want)
	rep.add("extra pod creates", "%d", made.count()-want)
	rep.add("POST pods answered 201 (API server metrics)", "%d", requests(t, env, "POST", "pods", "", "201"))
}

// TestKillTrainJobs: 100 TrainJobs (half torch, half MPI) are created
// while the manager is killed 20 times. Afterwards: exactly one JobSet
// each, one SSH Secret per MPI job, created once.
func TestKillTrainJobs(t *testing.T) {
	r := seed(t)
	env := startControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	installRuntimes(t, env.Client)
	w := &trainJobs{c: env.Client, ns: namespace(t, env.Client, "trainjob-kills"), n: objects}
	secretsMade := watchCreationsOf(ctx, t, env, w.ns, func() client.ObjectList { return &corev1.SecretList{} })
	w.watchStatus(ctx)
	m := newManagers(t, testenv.ChartKubeconfig(t, env), "--controllers", trainjob.Name)

	start := time.Now()
	killed := m.killer(ctx, r, m.start(), kills, 300*time.Millisecond, 1500*time.Millisecond)
	w.create(t, 100*time.Millisecond)
	n := <-killed
	lastKill := time.Now()
	after := waitConverged(t, "TrainJobs", w.converged)

	secrets := secretsMade.count()
	rep := &report{scenario: "TrainJob kills"}
	rep.add("jobs", "%d (%d MPI)", objects, objects/2)
	rep.add("kills", "%d", n)
	rep.add("JobSets deleted", "%d", requests(t, env, "DELETE", "jobsets", ""))
	rep.add("SSH Secrets created", "%d (want %d)", secrets, objects/2)
	rep.add("JobSets", "%d (want %d)", w.jobSets(t), objects)
	rep.add("false statuses", "%d", len(w.violations))
	rep.add("converged after last kill", "%s", after.Round(100*time.Millisecond))
	rep.add("total", "%s", (lastKill.Sub(start) + after).Round(100*time.Millisecond))
	rep.print(t)
	if secrets != objects/2 {
		t.Errorf("%d SSH Secrets created, want %d", secrets, objects/2)
	}
	if len(w.violations) > 0 {
		t.Errorf("statuses claimed what was not so:\n%s", strings.Join(w.violations, "\n"))
	}
}

// TestLeaderFailover: two replicas elect a leader; the leader is killed
// halfway through creating 100 RayClusters. The other takes over, with
// the manager's default lease timings, within 20 s, and the end state is
// the same as without a failover.
func TestLeaderFailover(t *testing.T) {
	env := startControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &rayClusters{c: env.Client, ns: namespace(t, env.Client, "ray-failover"), n: objects}
	made := watchCreations(ctx, t, env, w.ns)
	kubelet(ctx, env.Client, w.ns)
	w.watchStatus(ctx)
	m := newManagers(t, testenv.ChartKubeconfig(t, env), "--controllers", raycluster.Name,
		"--leader-elect", "--leader-election-namespace", testenv.ChartNamespace)

	first := m.start()
	leader := waitLeader(t, env.Client, "")
	m.start()

	var takeover time.Duration
	var next string
	tookOver := make(chan struct{})
	w.create(t, 50*time.Millisecond, func() {
		first.Kill()
		killedAt := time.Now()
		go func() {
			defer close(tookOver)
			next = waitLeader(t, env.Client, leader)
			takeover = time.Since(killedAt)
		}()
	})
	<-tookOver
	after := waitConverged(t, "RayClusters", w.converged)

	rep := &report{scenario: "leader failover"}
	rep.add("clusters", "%d", objects)
	rep.add("takeover", "%s (from %s to %s)", takeover.Round(100*time.Millisecond), leader, next)
	podsMade(t, rep, env, made)
	rep.add("false statuses", "%d", len(w.violations))
	rep.add("converged after takeover", "%s", after.Round(100*time.Millisecond))
	rep.print(t)
	if takeover > 20*time.Second {
		t.Errorf("takeover took %s, want under 20 s", takeover)
	}
	if extra := made.count() - objects*(1+workers); extra != 0 {
		t.Errorf("%d extra pod creates", extra)
	}
	if len(w.violations) > 0 {
		t.Errorf("statuses claimed what was not so:\n%s", strings.Join(w.violations, "\n"))
	}
}

// waitLeader waits until the manager's Lease names a holder other than
// previous, and returns it.
func waitLeader(t *testing.T, c client.Client, previous string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		lease := &coordinationv1.Lease{}
		err := c.Get(context.Background(), client.ObjectKey{Namespace: testenv.ChartNamespace, Name: "gantry-manager.gantry.dev"}, lease)
		if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); err == nil && holder != "" && holder != previous {
			return holder
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no leader other than %q within a minute", previous)
	return ""
}

// TestAPIFaults: the manager reaches the API server through a proxy that
// fails 10 % of its writes (500, 429, 409) and times out 1 % more after
// doing them, while 100 RayClusters and 100 TrainJobs are created and a
// NodeSet scales 0→50→0 with 5 busy nodes. All three converge with no
// duplicate, no busy node's pod deleted and no false status.
func TestAPIFaults(t *testing.T) {
	r := seed(t)
	env := startControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	installRuntimes(t, env.Client)
	rays := &rayClusters{c: env.Client, ns: namespace(t, env.Client, "ray-faults"), n: objects}
	made := watchCreations(ctx, t, env, rays.ns)
	jobs := &trainJobs{c: env.Client, ns: namespace(t, env.Client, "trainjob-faults"), n: objects}
	secretsMade := watchCreationsOf(ctx, t, env, jobs.ns, func() client.ObjectList { return &corev1.SecretList{} })
	slurmc, _ := newSlurmCluster(t, env.Client, namespace(t, env.Client, "slurm-faults"))
	slurmPods := watchCreations(ctx, t, env, slurmc.ns)
	kubelet(ctx, env.Client, rays.ns)
	kubeletWith(ctx, env.Client, slurmc.ns, slurmc.register)
	slurmc.watchDeletions(ctx)
	rays.watchStatus(ctx)
	jobs.watchStatus(ctx)
	proxy, kubeconfig := startFaultProxy(t, env, r, 0.10, 0.01)
	m := newManagers(t, kubeconfig, "--controllers", raycluster.Name+","+trainjob.Name+","+slurmworkload.Name,
		"--feature-gates", string(slurmworkload.SlurmrestdURLOverride)+"=true")
	m.start()

	start := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); jobs.create(t, 20*time.Millisecond) }()
	slurmc.scale(t, faultNodeSetPods)
	rays.create(t, 20*time.Millisecond, nil)
	<-done
	waitConverged(t, "RayClusters", rays.converged)
	waitConverged(t, "TrainJobs", jobs.converged)
	slurmc.waitPods(t, faultNodeSetPods, true, converge)
	live, _, err := slurmc.pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	busy := slurmc.occupy(r, live, faultNodeSetPods/10)
	slurmc.scale(t, 0)
	slurmc.waitPods(t, len(busy), false, converge)
	slurmc.release()
	slurmc.waitPods(t, 0, false, converge)
	took := time.Since(start)

	dups, orphans := rays.tally(t)
	secrets := secretsMade.count()
	rep := &report{scenario: "API faults"}
	rep.add("objects", "%d RayClusters, %d TrainJobs, a NodeSet 0→%d→0 with %d busy nodes", objects, objects, faultNodeSetPods, faultNodeSetPods/10)
	rep.add("faults", "%s", proxy.summary())
	rep.add("conflicts retried", "%d", proxy.conflicts)
	podsMade(t, rep, env, made)
	rep.add("duplicate pods", "%d", dups)
	rep.add("orphans", "%d", orphans)
	rep.add("JobSets", "%d (want %d)", jobs.jobSets(t), objects)
	rep.add("SSH Secrets created", "%d (want %d)", secrets, objects/2)
	rep.add("NodeSet pods created", "%d (want %d)", slurmPods.count(), faultNodeSetPods)
	rep.add("busy NodeSet pods deleted", "%d", len(slurmc.violations))
	rep.add("false statuses", "%d", len(rays.violations)+len(jobs.violations))
	rep.add("converged", "%s", took.Round(100*time.Millisecond))
	rep.print(t)
	if extra := made.count() - objects*(1+workers); extra != 0 {
		t.Errorf("%d extra pod creates", extra)
	}
	if secrets != objects/2 {
		t.Errorf("%d SSH Secrets created, want %d", secrets, objects/2)
	}
	if n := slurmPods.count(); n != faultNodeSetPods {
		t.Errorf("%d NodeSet pods created, want %d", n, faultNodeSetPods)
	}
	if len(slurmc.violations) > 0 {
		t.Errorf("busy nodes lost their pods:\n%s", strings.Join(slurmc.violations, "\n"))
	}
	if v := append(rays.violations, jobs.violations...); len(v) > 0 {
		t.Errorf("statuses claimed what was not so:\n%s", strings.Join(v, "\n"))
	}
}
