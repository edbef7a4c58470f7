package realslurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gantry-dev/gantry/pkg/slurm"
)

func (c *cluster) client(t *testing.T) slurm.Client {
	t.Helper()
	client, err := slurm.NewClient(slurm.Config{URL: c.url, UserName: c.userName, JWTKey: c.jwtKey})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// createNodes makes dynamic CLOUD nodes with names unique to this test, so
// a cluster given through GANTRY_SLURM_URL can be shared, and deletes them
// afterwards. No slurmd backs them: slurmctld keeps them powered down, which
// is enough to drain, resume and even allocate them.
func uniqueName(prefix string) string {
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	return prefix + "-" + hex.EncodeToString(suffix)
}

func (c *cluster) createNodes(t *testing.T, cpus int, n int) []string {
	t.Helper()
	base := uniqueName("gantry")
	var names []string
	for i := range n {
		name := base + "-" + strconv.Itoa(i)
		c.inRoot(t, "scontrol", "create", "NodeName="+name, "CPUs="+strconv.Itoa(cpus), "State=CLOUD")
		names = append(names, name)
	}
	t.Cleanup(func() {
		// Jobs on the nodes would block deletion.
		c.inRoot(t, "scancel", "--nodelist="+strings.Join(names, ","))
		NewWithT(t).Eventually(func() error {
			_, err := execInRoot(c.root, "scontrol", "delete", "NodeName="+strings.Join(names, ","))
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
	return names
}

// sinfoState is sinfo's long state of one node, e.g. "drained~" ("~":
// powered down).
func (c *cluster) sinfoState(t *testing.T, node string) string {
	t.Helper()
	return c.inRoot(t, "sinfo", "--noheader", "--nodes="+node, "--format=%T")
}

func TestPing(t *testing.T) {
	c := requireCluster(t)
	if err := c.client(t).Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Ping needs no credentials in Slurm, so the node list is what proves that
// slurmctld accepted a token Gantry signed.
func TestGantrySignedTokenIsAccepted(t *testing.T) {
	c := requireCluster(t)
	if _, err := c.client(t).ListNodes(context.Background()); err != nil {
		t.Fatalf("slurmrestd refused Gantry's token: %v", err)
	}
}

func TestTokenWithWrongKeyIsRejected(t *testing.T) {
	c := requireCluster(t)
	wrong, err := slurm.NewClient(slurm.Config{URL: c.url, UserName: c.userName, JWTKey: []byte("not the cluster's key")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.ListNodes(context.Background())
	if err == nil {
		t.Fatal("ListNodes with a token signed by the wrong key succeeded")
	}
	var apiErr *slurm.APIError
	rejected := errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusUnauthorized ||
		apiErr.StatusCode == http.StatusForbidden || apiErr.HasErrorNumber(slurm.ErrorNumberAuthentication))
	if !rejected || !strings.Contains(err.Error(), "Protocol authentication error") {
		t.Errorf("error = %v, want slurmctld's authentication error", err)
	}
}

func TestListAndGetDynamicNodes(t *testing.T) {
	c := requireCluster(t)
	names := c.createNodes(t, 2, 2)
	client := c.client(t)
	ctx := context.Background()

	nodes, err := client.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, n := range nodes {
		listed = append(listed, n.Name)
	}
	for _, name := range names {
		if !slices.Contains(listed, name) {
			t.Errorf("ListNodes = %v, missing %s", listed, name)
		}
	}

	got, err := client.GetNode(ctx, names[1])
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != names[1] || got.CPUs != 2 || !got.IsIdle() || got.IsDrain() || !got.HasState(slurm.NodeStateCloud) {
		t.Errorf("GetNode = %+v, want an idle 2-CPU cloud node", got)
	}
}

func TestDrainUndrainResume(t *testing.T) {
	c := requireCluster(t)
	node := c.createNodes(t, 1, 1)[0]
	client := c.client(t)
	ctx := context.Background()

	steps := []struct {
		name        string
		update      slurm.NodeUpdate
		wantDrained bool
		wantReason  string
		wantSinfo   string
	}{
		{"drain", slurm.DrainUpdate("gantry: pod cordoned"), true, "gantry: pod cordoned", "drained"},
		{"undrain", slurm.UndrainUpdate(), false, "", "idle"},
		{"drain again", slurm.DrainUpdate("gantry: scale-in"), true, "gantry: scale-in", "drained"},
		{"resume", slurm.ResumeUpdate(), false, "", "idle"},
	}
	for _, step := range steps {
		if err := client.UpdateNode(ctx, node, step.update); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		got, err := client.GetNode(ctx, node)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got.IsDrain() != step.wantDrained || got.IsDrained() != step.wantDrained || got.Reason != step.wantReason {
			t.Errorf("%s: node state %v reason %q; want drained=%v reason %q",
				step.name, got.State, got.Reason, step.wantDrained, step.wantReason)
		}
		if s := c.sinfoState(t, node); !strings.HasPrefix(s, step.wantSinfo) {
			t.Errorf("%s: sinfo says %q, want %s", step.name, s, step.wantSinfo)
		}
	}
}

func TestCommentIsStored(t *testing.T) {
	c := requireCluster(t)
	node := c.createNodes(t, 1, 1)[0]
	client := c.client(t)
	ctx := context.Background()
	comment := `{"namespace":"slurm","podName":"slurm-worker-0","node":"kw-1"}`
	if err := client.UpdateNode(ctx, node, slurm.CommentUpdate(comment)); err != nil {
		t.Fatal(err)
	}
	got, err := client.GetNode(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if got.Comment != comment {
		t.Errorf("comment = %q, want %q", got.Comment, comment)
	}
}

// startSlurmd registers a dynamic node the way a NodeSet pod does (slurmd
// -Z) and stops it afterwards. Unlike a CLOUD node, it really runs jobs:
// slurmctld requeues the job of a CLOUD node that is drained while
// "powering up", so only a real slurmd shows a node draining under a job.
func (c *cluster) startSlurmd(t *testing.T) string {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName("gantry-slurmd")
	c.inRoot(t, "slurmd", "-Z", "-N", name, "--conf", "CPUs=1 RealMemory=100 Port="+strconv.Itoa(ports[0]))
	t.Cleanup(func() {
		c.inRoot(t, "scancel", "--nodelist="+name)
		pidFile := filepath.Join(c.root, "run", "slurmd-"+name+".pid")
		if data, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGTERM)
				gone := func() bool { return syscall.Kill(pid, 0) != nil }
				if !waitFor(gone, 30*time.Second) {
					// slurmd can outwait a TERM while the step of the
					// cancelled job winds down; this is cleanup, not a
					// check of slurmd.
					t.Logf("slurmd %s (pid %d) ignored SIGTERM for 30s; killing it", name, pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
					NewWithT(t).Expect(waitFor(gone, 10*time.Second)).To(BeTrue(), "slurmd %s survived SIGKILL", name)
				}
			}
		}
		if _, err := execInRoot(c.root, "scontrol", "delete", "NodeName="+name); err != nil {
			t.Log(err)
		}
	})
	g := NewWithT(t)
	client := c.client(t)
	g.Eventually(func(g Gomega) {
		n, err := client.GetNode(context.Background(), name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.IsIdle()).To(BeTrue(), "state %v", n.State)
	}).WithTimeout(30*time.Second).Should(Succeed(), "slurmd %s did not register", name)
	return name
}

// A node with a job is draining, not drained, until the job ends: the
// difference the NodeSet reconciler waits on before deleting a pod.
func TestBusyNodeDrainsOnlyWhenItsJobEnds(t *testing.T) {
	c := requireCluster(t)
	g := NewWithT(t)
	node := c.startSlurmd(t)
	client := c.client(t)
	ctx := context.Background()

	out := c.inRoot(t, "sbatch", "--parsable", "--nodelist="+node, "--time=5", "--wrap=sleep 600")
	jobID := strings.TrimSpace(strings.Split(out, ";")[0])

	g.Eventually(func(g Gomega) {
		jobs, err := client.ListJobs(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		var job *slurm.Job
		for i := range jobs {
			if strconv.FormatInt(jobs[i].JobID, 10) == jobID {
				job = &jobs[i]
			}
		}
		g.Expect(job).NotTo(BeNil(), "job %s not listed", jobID)
		g.Expect(job.IsRunning()).To(BeTrue(), "job state %v", job.State)
		g.Expect(job.NodeNames()).To(Equal([]string{node}))
		deadline, bounded := job.Deadline()
		start, _ := job.StartTime.Time()
		g.Expect(bounded).To(BeTrue())
		g.Expect(deadline).To(Equal(start.Add(5 * time.Minute)))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	if err := client.UpdateNode(ctx, node, slurm.DrainUpdate("gantry: scale-in")); err != nil {
		t.Fatal(err)
	}
	got, err := client.GetNode(ctx, node)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.IsAllocated()).To(BeTrue(), "state %v", got.State)
	g.Expect(got.IsDrain()).To(BeTrue(), "state %v", got.State)
	g.Expect(got.IsDrained()).To(BeFalse(), "a node running a job reported drained: %v", got.State)

	c.inRoot(t, "scancel", jobID)
	g.Eventually(func(g Gomega) {
		n, err := client.GetNode(ctx, node)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.IsDrained()).To(BeTrue(), "state %v", n.State)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func TestSlurmrestdErrorsAreSurfaced(t *testing.T) {
	c := requireCluster(t)
	client := c.client(t)
	ctx := context.Background()
	missing := "gantry-no-such-node"

	err := client.UpdateNode(ctx, missing, slurm.DrainUpdate("x"))
	if err == nil || !strings.Contains(err.Error(), "Invalid node name specified") || !slurm.IsNotFound(err) {
		t.Errorf("UpdateNode(%s) = %v, want slurmctld's invalid node name error", missing, err)
	}
	_, err = client.GetNode(ctx, missing)
	if !slurm.IsNotFound(err) || !strings.Contains(err.Error(), "Failure to query node "+missing) {
		t.Errorf("GetNode(%s) = %v, want not found with the server's text", missing, err)
	}
	node := c.createNodes(t, 1, 1)[0]
	err = client.UpdateNode(ctx, node, slurm.NodeUpdate{State: []slurm.NodeState{"NOT_A_STATE"}})
	if err == nil || !strings.Contains(err.Error(), `Unknown flag "NOT_A_STATE"`) {
		t.Errorf("UpdateNode with a bad state = %v, want the data parser's error", err)
	}
}

// waitFor polls cond every 100ms until it holds or timeout passes.
func waitFor(cond func() bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFeaturesUpdate: the features update Gantry sends for a Node's
// features.slinky.slurm.net/spec (available and active, as lists) is what
// slurmrestd v0.0.44 takes, and an empty list clears them.
func TestFeaturesUpdate(t *testing.T) {
	c := requireCluster(t)
	g := NewWithT(t)
	client := c.client(t)
	ctx := context.Background()
	node := c.startSlurmd(t)
	want := []string{"k8s/GPU", "k8s/nn-75bf", "rack4"}
	g.Expect(client.UpdateNode(ctx, node, slurm.FeaturesUpdate(want, want))).To(Succeed())
	n, err := client.GetNode(ctx, node)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Features).To(ConsistOf(want))
	g.Expect(n.ActiveFeatures).To(ConsistOf(want))
	g.Expect(c.inRoot(t, "sinfo", "--noheader", "--nodes="+node, "--format=%f")).To(ContainSubstring("k8s/GPU"))

	g.Expect(client.UpdateNode(ctx, node, slurm.FeaturesUpdate([]string{"rack4"}, []string{"rack4"}))).To(Succeed())
	n, err = client.GetNode(ctx, node)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Features).To(Equal([]string{"rack4"}))
	g.Expect(n.ActiveFeatures).To(Equal([]string{"rack4"}))
}
