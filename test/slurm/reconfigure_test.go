package realslurm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/test/syncbuf"
)

// TestReconfigureSidecarScript runs the reconfigure sidecar's own script
// (the one a Controller with inplaceReconfigure runs beside slurmctld)
// against the real slurmctld: a partition added to slurm.conf reaches
// slurmctld without a restart, which it would not otherwise (slurmctld
// reads slurm.conf only when asked).
func TestReconfigureSidecarScript(t *testing.T) {
	c := requireCluster(t)
	confPath := filepath.Join(c.root, "etc", "slurm", "slurm.conf")
	original, err := os.ReadFile(confPath)
	if err != nil {
		t.Fatal(err)
	}
	partition := uniqueName("reconf")
	showPartition := func() (string, error) { return execInRoot(c.root, "scontrol", "show", "partition", partition) }
	if out, err := showPartition(); err == nil {
		t.Fatalf("partition %s exists before the change: %s", partition, out)
	}

	script := filepath.Join(c.root, "run", "gantry-reconfigure.sh")
	if err := os.WriteFile(script, []byte(slurmctld.ReconfigureScript), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var log syncbuf.Buffer
	sidecar := exec.CommandContext(ctx, "chroot", c.root, "env", "SLURM_CONF_DIR=/etc/slurm", "POLL_SECONDS=1", "bash", "/run/gantry-reconfigure.sh")
	sidecar.Stdout, sidecar.Stderr = &log, &log
	sidecar.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sidecar.Cancel = func() error { return syscall.Kill(-sidecar.Process.Pid, syscall.SIGKILL) }
	if err := sidecar.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = sidecar.Wait()
		_ = os.WriteFile(confPath, original, 0o644)
		_, _ = execInRoot(c.root, "scontrol", "reconfigure")
		_ = os.Remove(script)
		t.Logf("sidecar output:\n%s", log.String())
	})
	// Change the files only once it has taken its first look at them: it
	// says so.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(log.String(), "reconfigure: watching"); {
		if time.Now().After(deadline) {
			t.Fatalf("the sidecar did not start watching within 30s:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	changed := append(bytes.Clone(original), []byte("PartitionName="+partition+" Nodes=ALL State=UP MaxTime=INFINITE\n")...)
	if err := os.WriteFile(confPath, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := showPartition()
		if err == nil && strings.Contains(out, "PartitionName="+partition) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurmctld does not know partition %s 30s after slurm.conf changed: %v %s", partition, err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "asking slurmctld to reconfigure") {
		t.Errorf("the sidecar did not say it reconfigured:\n%s", log.String())
	}
}
