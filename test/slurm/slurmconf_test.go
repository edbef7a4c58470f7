package realslurm

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/test/syncbuf"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestGeneratedConfigRunsSlurmctld starts a real slurmctld on the files a
// Controller's ConfigMap holds (slurm.conf, cgroup.conf, gres.conf) for a
// Controller with one NodeSet, changed only where a pod's environment
// differs from this chroot: host and port, pid, state and log paths, and
// the Service address. slurmctld must come up as primary and report the
// dynamic-node settings Gantry writes as it read them. (slurmd is not run
// on these files: this machine has cgroup v1, and Gantry configures
// cgroup/v2, which the slurmd pods get on current nodes.)
func TestGeneratedConfigRunsSlurmctld(t *testing.T) {
	c := requireCluster(t)
	ctl := slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj()
	set := slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Partition("").Obj()
	cm := slurmctld.BuildConfigMap(ctl, slurmctld.ConfigInputs{NodeSets: []slinkyv1beta1.NodeSet{*set}})
	for _, name := range []string{slinky.SlurmConfFile, "cgroup.conf", "gres.conf"} {
		if cm.Data[name] == "" {
			t.Fatalf("the ConfigMap has no %s; it has %v", name, keysOf(cm.Data))
		}
	}

	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	const dir, state = "/etc/slurm-gen", "/var/spool/slurmctld-gen"
	replace := map[string]string{
		"SlurmctldHost":     fmt.Sprintf("%s(127.0.0.1)", host),
		"SlurmctldPort":     fmt.Sprint(ports[0]),
		"StateSaveLocation": state,
		"SlurmctldLogFile":  "/var/log/slurm/slurmctld-gen.log",
		"SlurmSchedLogFile": "/var/log/slurm/slurmctld-gen.log",
		"SlurmdLogFile":     "/var/log/slurm/slurmd-gen.log",
		"AuthAltParameters": "jwt_key=" + dir + "/jwt.key",
	}
	// One slurmctld per pod needs no pid file of its own; here the default
	// (/run/slurmctld.pid) is the shared cluster's, whose slurmctld a new
	// one would kill.
	conf := []string{"SlurmctldPidFile=/run/slurmctld-gen.pid"}
	for _, line := range strings.Split(cm.Data[slinky.SlurmConfFile], "\n") {
		key, _, _ := strings.Cut(line, "=")
		switch v, ok := replace[key]; {
		case key == "SlurmctldAddr":
			// The Service in front of slurmctld; none here.
			continue
		case ok:
			line = key + "=" + v
		}
		conf = append(conf, line)
	}
	files := map[string]string{
		slinky.SlurmConfFile: strings.Join(conf, "\n"),
		"cgroup.conf":        cm.Data["cgroup.conf"],
		"gres.conf":          cm.Data["gres.conf"],
	}
	etc := filepath.Join(c.root, dir)
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(etc) })
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{slinky.SlurmKeyFile, "jwt.key"} {
		data, err := os.ReadFile(filepath.Join(c.root, "etc", "slurm", key))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(etc, key), data, 0o600); err != nil {
			t.Fatal(err)
		}
		c.inRoot(t, "chown", slinky.SlurmUser+":"+slinky.SlurmUser, dir+"/"+key)
	}
	_ = os.RemoveAll(filepath.Join(c.root, state))
	if err := os.MkdirAll(filepath.Join(c.root, state), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(c.root, state)) })
	c.inRoot(t, "chown", slinky.SlurmUser+":"+slinky.SlurmUser, state)
	t.Logf("slurm.conf as given to slurmctld:\n%s", files[slinky.SlurmConfFile])

	// A /run/slurmctld of its own (see the accounting test), and /proc,
	// which slurmctld reads its own path from.
	var log syncbuf.Buffer
	a := &acctRun{t: t, c: c}
	a.startDaemon("slurmctld", &log, "unshare", "--mount", "--", "sh", "-c",
		`mount -t tmpfs tmpfs "$1/run/slurmctld" && { mountpoint -q "$1/proc" || mount -t proc proc "$1/proc"; } && `+
			`exec chroot "$1" env SLURM_CONF="$2" slurmctld -D`,
		"sh", c.root, dir+"/"+slinky.SlurmConfFile)
	a.waitFor("slurmctld up", func() bool {
		out, err := execInRoot(c.root, "env", "SLURM_CONF="+dir+"/"+slinky.SlurmConfFile, "scontrol", "ping")
		return err == nil && strings.Contains(out, "UP")
	}, log.String)
	if fatal := regexp.MustCompile(`(?m)^.*fatal:.*$`).FindString(log.String()); fatal != "" {
		t.Fatalf("slurmctld: %s", fatal)
	}

	shown, err := execInRoot(c.root, "env", "SLURM_CONF="+dir+"/"+slinky.SlurmConfFile, "scontrol", "show", "config")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(shown, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	for key, want := range map[string]string{
		"ClusterName":       ctl.ClusterName(),
		"ReturnToService":   "2",
		"ProctrackType":     "proctrack/cgroup",
		"TaskPlugin":        "task/cgroup,task/affinity",
		"JobAcctGatherType": "jobacct_gather/cgroup",
		"PrologFlags":       "Alloc,Contain",
		"GresTypes":         "gpu",
		"MaxNodeCount":      "1024",
	} {
		if got[key] != want {
			t.Errorf("slurmctld reads %s = %q, want %q", key, got[key], want)
		}
	}
	if !strings.Contains(log.String(), "Running as primary controller") {
		t.Errorf("slurmctld did not say it runs as primary:\n%s", log.String())
	}
	if parts, err := execInRoot(c.root, "env", "SLURM_CONF="+dir+"/"+slinky.SlurmConfFile, "scontrol", "show", "partition", "cpu"); err != nil || !strings.Contains(parts, "PartitionName=cpu") {
		t.Errorf("the NodeSet's partition is not there: %v %s", err, parts)
	}
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
