package realslurm

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/accounting"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/test/syncbuf"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestAccountingRecordsJobs is the Accounting kind's end-to-end proof on
// real daemons: MariaDB, a slurmdbd reading the slurmdbd.conf Gantry's
// builder renders, a slurmctld carrying the accounting lines Gantry's
// slurm.conf renderer writes, and a dynamic-node slurmd. A job run on the
// node is listed by sacct.
//
// It runs a second Slurm cluster next to start.sh's, in the same chroot
// but with its own configuration directory (/etc/slurm-acct), ports, state
// and cluster name, so the shared cluster and its slurm.conf are never
// touched. What differs from a pod, and why:
//   - slurmdbd.conf and slurm.conf live in /etc/slurm-acct (SLURM_CONF), not
//     /etc/slurm, which is the shared cluster's; slurm.key is copied there
//     because auth/slurm reads it beside the configuration.
//   - DbdHost is the pod name Gantry writes (acct-accounting-0): slurmdbd
//     runs in its own UTS namespace under that host name, as in its pod, and
//     /etc/hosts maps it and the Service name (acct-accounting) to 127.0.0.1
//     while the test runs.
//   - DbdPort and AccountingStoragePort stay 6819 unless that port is taken
//     on this machine; then both move to one free port (logged).
//   - the database host and port are the Accounting's own storageConfig
//     (127.0.0.1 and a free port), not an adjustment.
//   - the test's MariaDB runs without TLS (see startMariaDB): Debian sid's
//     slurmdbd fails on its TLS connections; the database is the user's
//     in a real deployment, not something Gantry configures.
func TestAccountingRecordsJobs(t *testing.T) {
	c := requireCluster(t)
	if c.noAccounting != "" {
		t.Skip(c.noAccounting)
	}
	for _, bin := range []string{"usr/sbin/slurmdbd", "usr/sbin/mariadbd", "usr/bin/mariadb-install-db", "usr/bin/mariadb", "usr/bin/sacct", "usr/bin/sacctmgr"} {
		if _, err := os.Stat(filepath.Join(c.root, bin)); err != nil {
			t.Skipf("the Slurm root %s has no /%s (start.sh installs slurmdbd and mariadb-server; see apt-accounting.log beside the root)", c.root, bin)
		}
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is needed to run slurmdbd under its pod's host name")
	}
	a := newAcctRun(t, c)

	password := `p#ss\w0rd` // '#' and '\' must survive slurmdbd.conf
	a.startMariaDB(password)

	acct := slinkytesting.MakeAccounting("acct", "slurm").Keys("keys").
		Storage("127.0.0.1", a.dbPort, "slurm", "db-pass", "password").Obj()
	conf, err := accounting.RenderSlurmdbdConf(acct, password)
	if err != nil {
		t.Fatal(err)
	}
	a.startSlurmdbd(acct, conf)

	ctl := slinkytesting.MakeController("slurm", "slurm").Keys("keys").Accounting(acct.Name).Obj()
	a.startSlurmctld(ctl, acct)
	a.startSlurmd()

	jobName := uniqueName("acct-probe")
	if out, err := a.slurm(2*time.Minute, "srun", "-N1", "-w", a.node, "--job-name="+jobName, "true"); err != nil {
		t.Fatalf("srun: %v\n%s", err, out)
	}
	var last string
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := a.slurm(time.Minute, "sacct", "-n", "-X", "-P", "--name="+jobName, "-o", "JobName,State,NodeList", "-S", "now-1hour")
		last = fmt.Sprintf("%s (err %v)", out, err)
		if err == nil && strings.Contains(out, jobName+"|COMPLETED|"+a.node) {
			t.Logf("sacct lists the job: %s", strings.TrimSpace(out))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sacct does not list job %s as COMPLETED on %s after 90s; last answer: %s\nslurmdbd log:\n%s",
				jobName, a.node, last, a.slurmdbdLog.String())
		}
		time.Sleep(time.Second)
	}
}

// acctRun is one run of the accounting cluster: what it started, to stop.
type acctRun struct {
	t                                     *testing.T
	c                                     *cluster
	etc                                   string // /etc/slurm-acct, inside the root
	node                                  string
	dbPort, dbdPort, ctldPort, slurmdPort int
	slurmdbdLog                           syncbuf.Buffer
}

const acctConfDir = "/etc/slurm-acct"

func newAcctRun(t *testing.T, c *cluster) *acctRun {
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	a := &acctRun{t: t, c: c, etc: filepath.Join(c.root, acctConfDir), node: uniqueName("acct"),
		dbPort: ports[0], ctldPort: ports[1], slurmdPort: ports[2], dbdPort: slinky.SlurmdbdPort}
	if !portFree(slinky.SlurmdbdPort) {
		more, err := freePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		a.dbdPort = more[0]
		t.Logf("port %d is taken on this machine: slurmdbd (DbdPort) and slurmctld (AccountingStoragePort) use %d", slinky.SlurmdbdPort, a.dbdPort)
	}
	if err := os.MkdirAll(a.etc, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(a.etc) })
	for _, key := range []string{slinky.SlurmKeyFile} {
		data, err := os.ReadFile(filepath.Join(c.root, "etc", "slurm", key))
		if err != nil {
			t.Fatal(err)
		}
		a.writeSlurmFile(key, data)
	}

	// The Service and pod names Gantry writes, resolved as in the cluster.
	hostsPath := filepath.Join(c.root, "etc", "hosts")
	hosts, err := os.ReadFile(hostsPath)
	if err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf("127.0.0.1 %s %s\n", slinky.AccountingName("acct"), slinky.AccountingPodName("acct"))
	if err := os.WriteFile(hostsPath, append(bytes.Clone(hosts), extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(hostsPath, hosts, 0o644) })
	return a
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// writeSlurmFile writes a file of /etc/slurm-acct owned by SlurmUser with
// mode 0600, as slurmdbd requires of slurmdbd.conf and auth/slurm of its key.
func (a *acctRun) writeSlurmFile(name string, data []byte) {
	path := filepath.Join(a.etc, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		a.t.Fatal(err)
	}
	if _, err := execInRoot(a.c.root, "chown", slinky.SlurmUser+":"+slinky.SlurmUser, filepath.Join(acctConfDir, name)); err != nil {
		a.t.Fatal(err)
	}
}

// slurm runs a Slurm command of the accounting cluster in the root.
func (a *acctRun) slurm(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "chroot", append([]string{a.c.root, "env", "SLURM_CONF=" + acctConfDir + "/slurm.conf"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (a *acctRun) mustSlurm(args ...string) string {
	a.t.Helper()
	out, err := a.slurm(time.Minute, args...)
	if err != nil {
		a.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// startDaemon starts a foreground daemon in its own process group and
// stops it (the whole group) when the test ends.
func (a *acctRun) startDaemon(name string, out *syncbuf.Buffer, args ...string) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		a.t.Fatalf("starting %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	a.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
}

// waitFor polls ok for up to a minute.
func (a *acctRun) waitFor(what string, ok func() bool, logs func() string) {
	a.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			a.t.Fatalf("%s: not after a minute\n%s", what, logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func listening(port int) func() bool {
	return func() bool {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}
}

// startMariaDB starts a MariaDB of its own (fresh data directory, a free
// port) and creates the user slurmdbd connects as.
func (a *acctRun) startMariaDB(password string) {
	const data, sock = "/var/lib/gantry-acct-mysql", "/run/gantry-acct-mysqld"
	for _, dir := range []string{data, sock} {
		_ = os.RemoveAll(filepath.Join(a.c.root, dir))
		if err := os.MkdirAll(filepath.Join(a.c.root, dir), 0o755); err != nil {
			a.t.Fatal(err)
		}
		if _, err := execInRoot(a.c.root, "chown", "mysql:mysql", dir); err != nil {
			a.t.Fatal(err)
		}
		a.t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(a.c.root, dir)) })
	}
	if out, err := execInRoot(a.c.root, "mariadb-install-db", "--user=mysql", "--datadir="+data,
		"--auth-root-authentication-method=socket", "--skip-test-db"); err != nil {
		a.t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	var log syncbuf.Buffer
	a.startDaemon("mariadbd", &log, "chroot", a.c.root, "mariadbd", "--no-defaults", "--user=mysql", "--datadir="+data,
		"--socket="+sock+"/mysqld.sock", "--pid-file="+sock+"/mysqld.pid", "--bind-address=127.0.0.1",
		"--port="+strconv.Itoa(a.dbPort), "--skip-name-resolve",
		// Debian sid's slurmdbd 26.05 cannot read results over MariaDB
		// 11.8's default TLS (libmariadb: "Number of columns in result
		// (=1) set exceeds maximum allowed number of columns (=0)"), a
		// defect of those packages, not of slurmdbd.conf: the database
		// speaks plain TCP on loopback here.
		"--skip-ssl",
		// Slurm refuses to write with snapshot isolation (its own warning).
		"--innodb-snapshot-isolation=OFF")
	a.waitFor("MariaDB listening", listening(a.dbPort), log.String)
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(password)
	sql := fmt.Sprintf("CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '%s'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';", quoted)
	if out, err := execInRoot(a.c.root, "mariadb", "--no-defaults", "--skip-ssl", "--socket="+sock+"/mysqld.sock", "-uroot", "-e", sql); err != nil {
		a.t.Fatalf("creating the database user: %v\n%s", err, out)
	}
}

// startSlurmdbd writes conf (Gantry's slurmdbd.conf, with DbdPort moved
// only when 6819 is taken) and runs slurmdbd under its pod's host name.
func (a *acctRun) startSlurmdbd(acct *slinkyv1beta1.Accounting, conf string) {
	if a.dbdPort != slinky.SlurmdbdPort {
		conf = strings.Replace(conf, fmt.Sprintf("DbdPort=%d\n", slinky.SlurmdbdPort), fmt.Sprintf("DbdPort=%d\n", a.dbdPort), 1)
	}
	a.t.Logf("slurmdbd.conf (password elided):\n%s", elidePassword(conf))
	a.writeSlurmFile(accounting.SlurmdbdConfFile, []byte(conf))
	// slurmdbd keeps its pid file in /run/slurmdbd, which the pod's /run
	// volume lets it create; the chroot's /run belongs to root.
	run := filepath.Join(a.c.root, "run", "slurmdbd")
	if err := os.MkdirAll(run, 0o755); err != nil {
		a.t.Fatal(err)
	}
	if _, err := execInRoot(a.c.root, "chown", "slurm:slurm", "/run/slurmdbd"); err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { _ = os.RemoveAll(run) })
	host := slinky.AccountingPodName(acct.Name)
	a.startDaemon("slurmdbd", &a.slurmdbdLog, "unshare", "--uts", "--", "sh", "-c",
		`hostname "$1" && exec chroot "$2" env SLURM_CONF="$3" slurmdbd -D`, "sh", host, a.c.root, acctConfDir+"/slurm.conf")
	a.waitFor("slurmdbd listening", listening(a.dbdPort), a.slurmdbdLog.String)
}

func elidePassword(conf string) string {
	var out []string
	for _, line := range strings.Split(conf, "\n") {
		if strings.HasPrefix(line, "StoragePass=") {
			line = "StoragePass=…"
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// startSlurmctld writes the accounting cluster's slurm.conf — the shared
// cluster's settings with its own names, ports and directories, plus the
// ACCOUNTING lines of the slurm.conf Gantry renders for ctl — registers
// the cluster with slurmdbd and starts slurmctld.
func (a *acctRun) startSlurmctld(ctl *slinkyv1beta1.Controller, acct *slinkyv1beta1.Accounting) {
	gantryConf := slurmctld.RenderSlurmConf(ctl, slurmctld.ConfigInputs{Accounting: acct})
	var accountingLines []string
	for _, line := range strings.Split(gantryConf, "\n") {
		if strings.HasPrefix(line, "AccountingStorage") {
			if a.dbdPort != slinky.SlurmdbdPort {
				line = strings.Replace(line, "AccountingStoragePort="+strconv.Itoa(slinky.SlurmdbdPort), "AccountingStoragePort="+strconv.Itoa(a.dbdPort), 1)
			}
			accountingLines = append(accountingLines, line)
		}
	}
	if len(accountingLines) != 3 {
		a.t.Fatalf("Gantry's slurm.conf has no slurmdbd lines:\n%s", gantryConf)
	}
	host, err := os.Hostname()
	if err != nil {
		a.t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	conf := fmt.Sprintf(`ClusterName=gantry-acct
SlurmctldHost=%s(127.0.0.1)
SlurmctldPort=%d
SlurmUser=slurm
AuthType=auth/slurm
CredType=cred/slurm
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=/etc/slurm/jwt.key
StateSaveLocation=/var/spool/slurmctld-acct
SlurmctldPidFile=/run/slurmctld-acct.pid
SlurmctldLogFile=/var/log/slurm/slurmctld-acct.log
SelectType=select/cons_tres
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MaxNodeCount=8
SlurmdSpoolDir=/var/spool/slurmd-acct/%%n
SlurmdPidFile=/run/slurmd-acct-%%n.pid
SlurmdLogFile=/var/log/slurm/slurmd-acct-%%n.log
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
%s
`, host, a.ctldPort, strings.Join(accountingLines, "\n"))
	a.t.Logf("slurm.conf of the accounting cluster:\n%s", conf)
	if err := os.WriteFile(filepath.Join(a.etc, "slurm.conf"), []byte(conf), 0o644); err != nil {
		a.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.etc, "cgroup.conf"), []byte("CgroupPlugin=disabled\n"), 0o644); err != nil {
		a.t.Fatal(err)
	}
	for _, dir := range []string{"/var/spool/slurmctld-acct", "/var/spool/slurmd-acct"} {
		_ = os.RemoveAll(filepath.Join(a.c.root, dir))
		if err := os.MkdirAll(filepath.Join(a.c.root, dir), 0o755); err != nil {
			a.t.Fatal(err)
		}
		a.t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(a.c.root, dir)) })
	}
	if _, err := execInRoot(a.c.root, "chown", "slurm:slurm", "/var/spool/slurmctld-acct"); err != nil {
		a.t.Fatal(err)
	}
	a.mustSlurm("sacctmgr", "-i", "add", "cluster", "gantry-acct")

	var log syncbuf.Buffer
	// A /run/slurmctld of its own: slurmctld serves its sack socket there
	// and removes it when it stops, which would leave the shared cluster's
	// slurmctld without one (the keys are the same, so Slurm's commands
	// here authenticate through the shared one).
	a.startDaemon("slurmctld", &log, "unshare", "--mount", "--", "sh", "-c",
		`mount -t tmpfs tmpfs "$1/run/slurmctld" && exec chroot "$1" env SLURM_CONF="$2" slurmctld -D`,
		"sh", a.c.root, acctConfDir+"/slurm.conf")
	a.waitFor("slurmctld up", func() bool {
		out, err := a.slurm(10*time.Second, "scontrol", "ping")
		return err == nil && strings.Contains(out, "UP")
	}, func() string { return log.String() + a.slurmdbdLog.String() })
}

// startSlurmd runs a dynamic-node slurmd, as a NodeSet pod does, and waits
// for the node to be idle.
func (a *acctRun) startSlurmd() {
	var log syncbuf.Buffer
	a.startDaemon("slurmd", &log, "chroot", a.c.root, "env", "SLURM_CONF="+acctConfDir+"/slurm.conf",
		"slurmd", "-D", "-Z", "-N", a.node, "--conf", fmt.Sprintf("CPUs=1 RealMemory=100 Port=%d", a.slurmdPort))
	a.waitFor("node "+a.node+" idle", func() bool {
		out, err := a.slurm(10*time.Second, "sinfo", "-h", "-n", a.node, "-o", "%t")
		return err == nil && strings.HasPrefix(strings.TrimSpace(out), "idle")
	}, log.String)
}
