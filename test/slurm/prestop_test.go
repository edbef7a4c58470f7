package realslurm

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// runPreStop runs slurmd's preStop, as Gantry ships it, against the real
// slurmctld for node: sh -c SCRIPT in the chroot, with hostname answering
// the node's name as it does inside the pod.
func (c *cluster) runPreStop(t *testing.T, node string) {
	t.Helper()
	if out, err := execInRoot(c.root, "/usr/bin/sh", "-c", "hostname() { echo "+node+"; }\n"+nodeset.PreStopScript); err != nil {
		t.Fatalf("preStop of %s: %v %s", node, err, out)
	}
}

// reregister has slurmctld ask every slurmd to register again, as it
// does periodically by itself, and returns once the registrations are in:
// a probe node set DOWN beforehand is back (ReturnToService=2 lifts a DOWN
// on registration). Slurm sends no event for a registration.
func (c *cluster) reregister(t *testing.T) {
	t.Helper()
	probe := c.startSlurmd(t)
	c.inRoot(t, "scontrol", "update", "NodeName="+probe, "State=DOWN", "Reason=probe")
	c.inRoot(t, "scontrol", "reconfigure")
	NewWithT(t).Eventually(func() string {
		out, _ := execInRoot(c.root, "scontrol", "--oneliner", "show", "node", probe)
		return field(out, "State")
	}).WithTimeout(30*time.Second).ShouldNot(ContainSubstring("DOWN"), "slurmd %s did not register again", probe)
}

// field is KEY's value in scontrol's one-line output.
func field(out, key string) string {
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// jobState is squeue's state of the job, or "" once squeue no longer
// lists it (it ended and was purged).
func (c *cluster) jobState(t *testing.T, id string) string {
	t.Helper()
	out, err := execInRoot(c.root, "squeue", "--noheader", "--jobs="+id, "--format=%T")
	if err != nil && strings.Contains(err.Error(), "Invalid job id") {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// TestPreStop runs the preStop Gantry puts in every slurmd pod against a
// real slurmctld (ReturnToService=2, as Gantry configures it).
func TestPreStop(t *testing.T) {
	c := requireCluster(t)
	client := c.client(t)
	ctx := context.Background()
	get := func(g Gomega, name string) *slurm.Node {
		n, err := client.GetNode(ctx, name)
		g.Expect(err).NotTo(HaveOccurred(), "node %s: its record is gone", name)
		return n
	}

	t.Run("keeps the record, drained before DOWN, and the drain outlives a re-registration", func(t *testing.T) {
		g := NewWithT(t)
		node := c.startSlurmd(t)
		c.runPreStop(t, node)
		n := get(g, node)
		g.Expect(n.IsDown()).To(BeTrue(), "state %v", n.State)
		g.Expect(n.IsDrain()).To(BeTrue(), "state %v", n.State)
		g.Expect(n.Reason).To(Equal(nodeset.PreStopReason))

		// The terminating pod's slurmd still runs; slurmctld asks it to
		// register (every ~20 pings, and on reconfigure), which lifts a
		// DOWN under ReturnToService=2. No job may land on the pod.
		c.reregister(t)
		n = get(g, node)
		g.Expect(n.IsDrain()).To(BeTrue(), "a re-registration returned a terminating pod's node to service: %v", n.State)
		g.Expect(n.Reason).To(Equal(nodeset.PreStopReason))
	})

	t.Run("a pending job that names the node survives the pod's going and a reconfigure, and runs once the node is back", func(t *testing.T) {
		g := NewWithT(t)
		node := c.startSlurmd(t)
		// Scale-in drains the node before deleting its pod.
		g.Expect(client.UpdateNode(ctx, node, slurm.DrainUpdate("slurm-operator: Pod (ns/x) is pending termination for scale-in"))).To(Succeed())
		out := c.inRoot(t, "sbatch", "--parsable", "--nodelist="+node, "--time=5", "--wrap=true")
		job := strings.TrimSpace(strings.Split(out, ";")[0])
		t.Cleanup(func() { _, _ = execInRoot(c.root, "scancel", job) })
		g.Expect(c.jobState(t, job)).To(Equal("PENDING"))

		c.runPreStop(t, node)
		// slurmctld re-reads its configuration (a Controller change, an
		// inplaceReconfigure): jobs naming a node it no longer has fail.
		c.inRoot(t, "scontrol", "reconfigure")
		g.Consistently(func() string { return c.jobState(t, job) }).WithTimeout(5*time.Second).WithPolling(500*time.Millisecond).
			Should(Equal("PENDING"), "the job waiting for %s was ended", node)

		// The pod comes back under the same name; Gantry returns the node.
		g.Expect(client.UpdateNode(ctx, node, slurm.ResumeUpdate())).To(Succeed())
		g.Eventually(func() string { return c.jobState(t, job) }).WithTimeout(30*time.Second).
			Should(Or(BeEmpty(), Equal("COMPLETED")), "the job did not run on the returned node")
	})

	t.Run("an administrator's drain and reason are left as they are, and survive a re-registration", func(t *testing.T) {
		g := NewWithT(t)
		node := c.startSlurmd(t)
		const reason = "admin: bad DIMM"
		c.inRoot(t, "scontrol", "update", "NodeName="+node, "State=DRAIN", "Reason="+reason)
		c.runPreStop(t, node)
		n := get(g, node)
		g.Expect(n.IsDrain()).To(BeTrue(), "state %v", n.State)
		g.Expect(n.IsDown()).To(BeFalse(), "the preStop set DOWN over an administrator's drain: %v", n.State)
		g.Expect(n.Reason).To(Equal(reason))

		c.reregister(t)
		n = get(g, node)
		g.Expect(n.IsDrain()).To(BeTrue(), "state %v", n.State)
		g.Expect(n.Reason).To(Equal(reason))
	})

	// What lasts under ReturnToService=2, as docs/slurm.md says: an
	// administrator's DRAIN (alone or with DOWN) and its reason; a DOWN
	// alone is lifted by the next registration.
	t.Run("under ReturnToService=2 an administrator's DRAIN and DOWN last as a DRAIN", func(t *testing.T) {
		g := NewWithT(t)
		node := c.startSlurmd(t)
		c.inRoot(t, "scontrol", "update", "NodeName="+node, "State=DRAIN", "Reason=admin: PSU")
		c.inRoot(t, "scontrol", "update", "NodeName="+node, "State=DOWN", "Reason=admin: PSU")
		// reregister's probe shows that a DOWN alone does not last.
		c.reregister(t)
		n := get(g, node)
		g.Expect(n.IsDrain()).To(BeTrue(), "state %v", n.State)
		g.Expect(n.Reason).To(Equal("admin: PSU"))
	})
}
