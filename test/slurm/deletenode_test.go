package realslurm

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gantry-dev/gantry/pkg/slurm"
)

// DeleteNode removes an idle dynamic node (pruneSlurmNodeRecords:
// NodeNotFound relies on it), and slurmctld refuses it for a node that
// runs a job, which keeps the pruning fail-closed even if Gantry's own
// checks were wrong.
func TestDeleteNode(t *testing.T) {
	c := requireCluster(t)
	g := NewWithT(t)
	client := c.client(t)
	ctx := context.Background()

	idle := uniqueName("gantry-del")
	c.inRoot(t, "scontrol", "create", "NodeName="+idle, "CPUs=1", "State=CLOUD")
	t.Cleanup(func() { _, _ = execInRoot(c.root, "scontrol", "delete", "NodeName="+idle) })
	g.Expect(client.DeleteNode(ctx, idle)).To(Succeed())
	_, err := client.GetNode(ctx, idle)
	g.Expect(slurm.IsNotFound(err)).To(BeTrue(), "GetNode after DeleteNode: %v", err)

	busy := c.startSlurmd(t)
	out := c.inRoot(t, "sbatch", "--parsable", "--nodelist="+busy, "--time=5", "--wrap=sleep 600")
	jobID := strings.TrimSpace(strings.Split(out, ";")[0])
	t.Cleanup(func() { _, _ = execInRoot(c.root, "scancel", jobID) })
	g.Eventually(func(g Gomega) {
		n, err := client.GetNode(ctx, busy)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.IsBusy()).To(BeTrue(), "state %v", n.State)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(client.DeleteNode(ctx, busy)).NotTo(Succeed(), "slurmctld deleted a node running job %s", jobID)
	_, err = client.GetNode(ctx, busy)
	g.Expect(err).NotTo(HaveOccurred(), "the busy node is gone")
}
