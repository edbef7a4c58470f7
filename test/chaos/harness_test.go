//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/test/testenv"
)

// The manager under test logs to its own file; the harness's envtest and
// clients have nothing to say.
func init() { ctrl.SetLogger(logr.Discard()) }

// seed makes a run repeatable: GANTRY_CHAOS_SEED, or the time.
func seed(t *testing.T) *rand.Rand {
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("GANTRY_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("GANTRY_CHAOS_SEED=%q: %v", v, err)
		}
		s = n
	}
	t.Logf("seed %d (GANTRY_CHAOS_SEED=%d repeats this run's timing choices)", s, s)
	return rand.New(rand.NewPCG(s, s))
}

func startControlPlane(t *testing.T) *testenv.Env {
	var adders []func(*apiruntime.Scheme) error
	adders = append(adders, raycluster.Integration().AddToScheme...)
	adders = append(adders, trainjob.Integration().AddToScheme...)
	adders = append(adders, slurm.Integration().AddToScheme...)
	return testenv.Start(t, testenv.Options{AddToScheme: adders})
}

func namespace(t *testing.T, c client.Client, name string) string {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// managers starts, kills and restarts the manager process. Every process
// it started is stopped when the test ends.
type managers struct {
	t          *testing.T
	kubeconfig []byte
	dir        string
	args       []string

	mu      sync.Mutex
	started int
	all     []*testenv.ManagerProcess
}

func newManagers(t *testing.T, kubeconfig []byte, args ...string) *managers {
	m := &managers{t: t, kubeconfig: kubeconfig, dir: t.TempDir(), args: args}
	t.Cleanup(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, p := range m.all {
			p.Stop()
		}
		if t.Failed() {
			for _, p := range m.all {
				if data, err := os.ReadFile(p.Log); err == nil && len(data) > 0 {
					t.Logf("%s:\n%s", p.Log, testenv.TailLines(string(data), 40))
				}
			}
		}
	})
	return m
}

func (m *managers) start() *testenv.ManagerProcess {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started++
	p, err := testenv.StartManagerProcess(m.kubeconfig, m.dir, strconv.Itoa(m.started), m.args...)
	if err != nil {
		m.t.Fatal(err)
	}
	m.all = append(m.all, p)
	return p
}

// killer kills the running manager with SIGKILL kills times, at random
// moments between minGap and maxGap apart, restarting it at once each
// time, and reports how many it did when stopped.
func (m *managers) killer(ctx context.Context, r *rand.Rand, first *testenv.ManagerProcess, kills int, minGap, maxGap time.Duration) <-chan int {
	out := make(chan int, 1)
	go func() {
		cur, done := first, 0
		defer func() { out <- done }()
		for done < kills {
			gap := minGap + time.Duration(r.Int64N(int64(maxGap-minGap)+1))
			select {
			case <-ctx.Done():
				return
			case <-time.After(gap):
			}
			cur.Kill()
			done++
			cur = m.start()
		}
	}()
	return out
}

// kubelet plays every node's kubelet in namespace ns until ctx ends: each
// Pod becomes Running and Ready a moment after it appears.
func kubelet(ctx context.Context, c client.Client, ns string) { kubeletWith(ctx, c, ns, nil) }

// kubeletWith is kubelet calling started (when not nil) for each pod it
// started, after the pod shows Running.
func kubeletWith(ctx context.Context, c client.Client, ns string, started func(*corev1.Pod)) {
	go func() {
		ip := atomic.Int32{}
		for ctx.Err() == nil {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns)); err == nil {
				for i := range pods.Items {
					p := &pods.Items[i]
					if p.Status.Phase == corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
						continue
					}
					n := ip.Add(1)
					now := metav1.Now()
					p.Status.Phase = corev1.PodRunning
					p.Status.PodIP = fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255)
					p.Status.Conditions = []corev1.PodCondition{
						{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
						{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
					}
					p.Status.ContainerStatuses = nil
					for _, ct := range p.Spec.Containers {
						p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: ct.Name, Image: ct.Image, Ready: true,
							State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
					}
					if err := c.Status().Update(ctx, p); err == nil && started != nil {
						started(p)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// requests reads the API server's own request counter
// (apiserver_request_total) and sums the series of verb on resource (and
// subresource, "" for the object itself) whose code is in codes (all
// codes when empty).
func requests(t *testing.T, env *testenv.Env, verb, resource, subresource string, codes ...string) int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	s := bufio.NewScanner(strings.NewReader(string(raw)))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels := line[strings.Index(line, "{")+1 : strings.LastIndex(line, "}")]
		if label(labels, "verb") != verb || label(labels, "resource") != resource || label(labels, "subresource") != subresource {
			continue
		}
		if len(codes) > 0 && !contains(codes, label(labels, "code")) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndex(line, "}")+1:]), 64)
		if err == nil {
			sum += int(v)
		}
	}
	return sum
}

func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// report prints one scenario's figures as a table row set.
type report struct {
	scenario string
	rows     [][2]string
}

func (r *report) add(k string, format string, args ...any) {
	r.rows = append(r.rows, [2]string{k, fmt.Sprintf(format, args...)})
}

func (r *report) print(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| %s | |\n|---|---|\n", r.scenario)
	for _, row := range r.rows {
		fmt.Fprintf(&b, "| %s | %s |\n", row[0], row[1])
	}
	t.Log(b.String())
	// The summary lines CI prints.
	fmt.Printf("CHAOS %s: %s\n", r.scenario, func() string {
		var parts []string
		for _, row := range r.rows {
			parts = append(parts, row[0]+"="+row[1])
		}
		return strings.Join(parts, ", ")
	}())
}

// creations counts the distinct pods ever made in a namespace, from a
// watch (re-listed whenever it ends), so that a pod created and deleted
// again between two looks is counted too. The API server's request
// counter is reported beside it, but it undercounts: a create whose
// client was killed before the answer is recorded with another code.
type creations struct {
	mu   sync.Mutex
	uids map[types.UID]bool
}

func watchCreations(ctx context.Context, t *testing.T, env *testenv.Env, ns string) *creations {
	return watchCreationsOf(ctx, t, env, ns, func() client.ObjectList { return &corev1.PodList{} })
}

// watchCreationsOf counts the distinct objects of newList's kind.
func watchCreationsOf(ctx context.Context, t *testing.T, env *testenv.Env, ns string, newList func() client.ObjectList) *creations {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cr := &creations{uids: map[types.UID]bool{}}
	go func() {
		for ctx.Err() == nil {
			list := newList()
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			items, _ := meta.ExtractList(list)
			for _, o := range items {
				if obj, ok := o.(client.Object); ok {
					cr.add(obj.GetUID())
				}
			}
			w, err := c.Watch(ctx, newList(), client.InNamespace(ns),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				if obj, ok := ev.Object.(client.Object); ok {
					cr.add(obj.GetUID())
				}
			}
		}
	}()
	return cr
}

func (c *creations) add(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uids[uid] = true
}

func (c *creations) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.uids)
}
