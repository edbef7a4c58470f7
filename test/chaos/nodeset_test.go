//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slurmworkload "github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	"github.com/gantry-dev/gantry/test/testenv"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

const (
	nodeSetPods = 200
	busyNodes   = 20
	jwtKey      = "chaos-jwt-key-of-32-bytes-length"
)

// slurmCluster is the NodeSet half of a scenario: a fake slurmrestd over
// HTTP (the manager runs as its own process) whose nodes register as the
// kubelet stand-in starts their pods, and a watch on pod deletions that
// records any pod deleted while its Slurm node runs a job.
type slurmCluster struct {
	c     client.Client
	ns    string
	slurm *fake.Client

	mu         sync.Mutex
	busy       map[string]bool
	violations []string
}

func newSlurmCluster(t *testing.T, c client.Client, ns string) (*slurmCluster, string) {
	t.Helper()
	s := &slurmCluster{c: c, ns: ns, slurm: fake.New(), busy: map[string]bool{}}
	url, stop := fake.NewServer(s.slurm, fake.WithJWTKey([]byte(jwtKey))).Start()
	t.Cleanup(stop)
	ctx := context.Background()
	for _, obj := range []client.Object{
		slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "chaos-slurm-key", "jwt.key": jwtKey}).Obj(),
		slinkytesting.MakeController("slurm", ns).Keys("keys").Obj(),
		func() client.Object {
			ra := slinkytesting.MakeRestApi("slurm", ns, "slurm").Obj()
			ra.Annotations = map[string]string{slinkyv1beta1.AnnotationSlurmrestdURL: url}
			return ra
		}(),
		func() client.Object {
			set := slinkytesting.MakeNodeSet("cpu", ns, "slurm").Obj()
			set.Spec.Replicas = ptr.To[int32](0)
			return set
		}(),
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	return s, url
}

// register is the kubelet stand-in's hook: a pod that runs registers its
// Slurm node, idle, as slurmd would.
func (s *slurmCluster) register(p *corev1.Pod) {
	name := nodeset.SlurmNodeName(p)
	if _, ok := s.slurm.Node(name); !ok {
		s.slurm.SetNode(slurm.Node{Name: name, State: []slurm.NodeState{slurm.NodeStateIdle}})
	}
}

// occupy starts a job on n random nodes.
func (s *slurmCluster) occupy(r *rand.Rand, pods []corev1.Pod, n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, i := range r.Perm(len(pods))[:n] {
		names = append(names, nodeset.SlurmNodeName(&pods[i]))
	}
	sort.Strings(names)
	var jobs []slurm.Job
	for i, name := range names {
		node, _ := s.slurm.Node(name)
		node.State = []slurm.NodeState{slurm.NodeStateAllocated}
		s.slurm.SetNode(node)
		jobs = append(jobs, slurm.Job{JobID: int64(i + 1), Name: "chaos", State: []slurm.JobState{slurm.JobStateRunning}, Nodes: name})
		s.busy[name] = true
	}
	s.slurm.SetJobs(jobs...)
	return names
}

// release ends every job: a drained node becomes IDLE+DRAIN, its reason
// kept, as slurmctld leaves it.
func (s *slurmCluster) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slurm.SetJobs()
	for name := range s.busy {
		node, ok := s.slurm.Node(name)
		if !ok {
			continue
		}
		state := []slurm.NodeState{slurm.NodeStateIdle}
		if slices.Contains(node.State, slurm.NodeStateDrain) {
			state = append(state, slurm.NodeStateDrain)
		}
		node.State = state
		s.slurm.SetNode(node)
	}
	s.busy = map[string]bool{}
}

// watchDeletions records, until ctx ends, every pod that is being deleted
// while its node runs a job.
func (s *slurmCluster) watchDeletions(ctx context.Context) {
	go func() {
		for ctx.Err() == nil {
			var pods corev1.PodList
			if err := s.c.List(ctx, &pods, client.InNamespace(s.ns)); err == nil {
				s.mu.Lock()
				for i := range pods.Items {
					p := &pods.Items[i]
					if name := nodeset.SlurmNodeName(p); !p.DeletionTimestamp.IsZero() && s.busy[name] && len(s.violations) < 20 {
						s.violations = append(s.violations, fmt.Sprintf("pod %s deleted while node %s runs a job", p.Name, name))
					}
				}
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

func (s *slurmCluster) scale(t *testing.T, replicas int32) {
	t.Helper()
	set := &slinkyv1beta1.NodeSet{}
	key := client.ObjectKey{Namespace: s.ns, Name: "cpu"}
	if err := s.c.Get(context.Background(), key, set); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(set.DeepCopy())
	set.Spec.Replicas = ptr.To(replicas)
	if err := s.c.Patch(context.Background(), set, patch); err != nil {
		t.Fatal(err)
	}
}

// pods lists the NodeSet's live pods, and how many run. There is no
// kube-controller-manager, so the only pods of the namespace are the
// NodeSet's.
func (s *slurmCluster) pods(ctx context.Context) (live []corev1.Pod, running int, err error) {
	var list corev1.PodList
	if err := s.c.List(ctx, &list, client.InNamespace(s.ns)); err != nil {
		return nil, 0, err
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
	}
	return live, running, nil
}

func (s *slurmCluster) waitPods(t *testing.T, want int, running bool, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < within {
		live, up, err := s.pods(context.Background())
		if err == nil && len(live) == want && (!running || up == want) {
			return time.Since(start)
		}
		last = fmt.Sprintf("%d pods, %d running (err %v)", len(live), up, err)
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("want %d pods (running: %v) within %s; last %s", want, running, within, last)
	return 0
}

// TestKillNodeSet: a NodeSet scales 0→200→0 against a fake slurmrestd
// that answers over HTTP (JWT checked) while the manager is killed 20
// times. Exactly 200 pods are made, then none are left, and no pod is
// deleted while its Slurm node runs a job: 20 nodes are busy during the
// scale-in, and their pods stay until the jobs end.
func TestKillNodeSet(t *testing.T) {
	r := seed(t)
	env := startControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, _ := newSlurmCluster(t, env.Client, namespace(t, env.Client, "slurm-kills"))
	made := watchCreations(ctx, t, env, s.ns)
	kubeletWith(ctx, env.Client, s.ns, s.register)
	s.watchDeletions(ctx)
	m := newManagers(t, testenv.ChartKubeconfig(t, env), "--controllers", slurmworkload.Name,
		"--feature-gates", string(slurmworkload.SlurmrestdURLOverride)+"=true")

	start := time.Now()
	killed := m.killer(ctx, r, m.start(), kills, 500*time.Millisecond, 2500*time.Millisecond)
	s.scale(t, nodeSetPods)
	out := s.waitPods(t, nodeSetPods, true, converge)
	live, _, err := s.pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	occupied := s.occupy(r, live, busyNodes)
	s.scale(t, 0)
	// Every idle node drains and its pod goes; the busy ones stay.
	in := s.waitPods(t, busyNodes, false, converge)
	n := <-killed
	time.Sleep(5 * time.Second)
	kept, _, err := s.pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keptNodes []string
	for i := range kept {
		keptNodes = append(keptNodes, nodeset.SlurmNodeName(&kept[i]))
	}
	sort.Strings(keptNodes)
	if !slices.Equal(keptNodes, occupied) {
		t.Errorf("pods kept for nodes %v, want the busy ones %v", keptNodes, occupied)
	}
	s.release()
	drained := s.waitPods(t, 0, false, converge)

	created := made.count()
	rep := &report{scenario: "NodeSet kills"}
	rep.add("scale", "0→%d→0, %d nodes busy during the scale-in", nodeSetPods, busyNodes)
	rep.add("kills", "%d", n)
	rep.add("pods created", "%d (want %d)", created, nodeSetPods)
	rep.add("POST pods answered 201 (API server metrics)", "%d", requests(t, env, "POST", "pods", "", "201"))
	rep.add("pods kept while busy", "%d of %d", len(keptNodes), busyNodes)
	rep.add("busy pods deleted", "%d", len(s.violations))
	rep.add("slurmrestd requests", "%v", s.requestSummary())
	rep.add("scale-out", "%s", out.Round(100*time.Millisecond))
	rep.add("scale-in to the busy pods", "%s", in.Round(100*time.Millisecond))
	rep.add("busy pods gone after their jobs", "%s", drained.Round(100*time.Millisecond))
	rep.add("total", "%s", time.Since(start).Round(100*time.Millisecond))
	rep.print(t)
	if created != nodeSetPods {
		t.Errorf("%d pods created, want %d", created, nodeSetPods)
	}
	if len(s.violations) > 0 {
		t.Errorf("busy nodes lost their pods:\n%s", strings.Join(s.violations, "\n"))
	}
}

func (s *slurmCluster) requestSummary() string {
	return fmt.Sprintf("list nodes %d, get node %d, update node %d, delete node %d",
		s.slurm.Calls(fake.OpListNodes), s.slurm.Calls(fake.OpGetNode), s.slurm.Calls(fake.OpUpdateNode), s.slurm.Calls(fake.OpDeleteNode))
}
