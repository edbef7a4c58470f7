package flux

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// The scripts, run for real: init.sh as the flux-installer container and
// entrypoint.sh as the trainer container would, with bash, in a private
// mount and UTS namespace. There, a root of tmpfs gets the host's /usr and
// libraries, tmpfs and bind mounts where the pod has volumes (/mnt/flux,
// /etc/flux-config, /curve, /opt/software) and the view image has its view
// (/opt/views), and the hostname of the pod it plays. The Flux view is
// fake: its `flux` records its arguments and succeeds. Nothing of this
// reaches the host's mounts or files outside the test's directory.

// fakeFlux records each call's arguments (NUL after each, a record
// separator after the call) and answers `flux R encode`.
const fakeFlux = `#!/bin/bash
{ printf '%s\0' "$@"; printf '\036'; } >> /tmp/flux-calls
case "$1 ${2:-}" in
"R encode") echo '{"version": 1, "fake": true}' ;;
"start "*) exit "${FAKE_FLUX_START_EXIT:-0}" ;;
esac
exit 0
`

// podScript sets up the namespace's root and runs the plan's steps:
// "host NAME" sets the hostname, "init" runs the installer, "entrypoint"
// the trainer's command ($T/argv, NUL-separated). Each step's status goes
// to $T/out/status, its output to $T/out/log. At the end the volumes are
// copied to $T/out.
const podScript = `set -euo pipefail
T=$1
R=$T/root
mount --make-rprivate /
mkdir -p "$R"
mount -t tmpfs tmpfs "$R"
for d in usr bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$d" ]; then
    ln -s "$(readlink "/$d")" "$R/$d"
  elif [ -d "/$d" ]; then
    mkdir "$R/$d"
    mount --rbind "/$d" "$R/$d"
  fi
done
mkdir -p "$R/etc" "$R/proc" "$R/dev" "$R/tmp" "$R/root" "$R/mnt/flux" "$R/opt/views" "$R/opt/software" "$R/etc/flux-config" "$R/curve"
for f in ld.so.cache ld.so.conf ld.so.conf.d passwd group nsswitch.conf; do
  if [ -e "/etc/$f" ]; then cp -a "/etc/$f" "$R/etc/"; fi
done
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
mount -t tmpfs tmpfs "$R/tmp"
mount -t tmpfs tmpfs "$R/mnt/flux"
ro_bind() { mount --bind "$1" "$2"; mount -o remount,bind,ro "$2"; }
ro_bind "$T/config" "$R/etc/flux-config"
ro_bind "$T/curve" "$R/curve"
ro_bind "$T/views" "$R/opt/views"
mapfile -d '' argv < "$T/argv"
mkdir -p "$T/out"
run() {
  local rc=0
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    ${FAKE_FLUX_START_EXIT:+FAKE_FLUX_START_EXIT=$FAKE_FLUX_START_EXIT} \
    chroot "$R" "$@" >> "$T/out/log" 2>&1 || rc=$?
  echo "$rc" >> "$T/out/status"
}
while read -r step arg; do
  echo "=== $step $arg" >> "$T/out/log"
  case $step in
  host) echo "$arg" > /proc/sys/kernel/hostname ;;
  init)
    # The installer runs the view image: /opt/software is the image's.
    if mountpoint -q "$R/opt/software"; then umount "$R/opt/software"; fi
    ro_bind "$T/software" "$R/opt/software"
    run /bin/bash /etc/flux-config/init.sh ;;
  entrypoint)
    # The trainer has the spack-install emptyDir there.
    if mountpoint -q "$R/opt/software"; then umount "$R/opt/software"; fi
    mount -t tmpfs tmpfs "$R/opt/software"
    run "${argv[@]}"
    rm -rf "$T/out/opt-software"
    cp -a "$R/opt/software" "$T/out/opt-software" ;;
  esac
done < "$T/plan"
cp -a "$R/mnt/flux" "$T/out/mnt-flux"
if [ -e "$R/tmp/flux-calls" ]; then cp "$R/tmp/flux-calls" "$T/out/flux-calls"; fi
`

// pod is the outcome of a plan.
type pod struct {
	dir      string   // $T/out
	statuses []string // each init and entrypoint run's exit status
	calls    [][]string
	log      string
}

func (p pod) file(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, rel))
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, p.log)
	}
	return string(b)
}

// runPod plays one pod of the job b renders: plan lines as in podScript.
// prepare, when not nil, edits the test's directory before the run; env
// is added to the fake flux's environment.
func runPod(t *testing.T, b built, plan []string, prepare func(dir string), env ...string) pod {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("running the Flux scripts needs root (mount namespaces and mounts); running as uid %d", os.Geteuid())
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("running the Flux scripts needs unshare (util-linux): %v", err)
	}
	dir := t.TempDir()
	write := func(rel, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range b.configMap.Data {
		write("config/"+k, v, 0o755)
	}
	write("curve/curve.cert", string(b.secret.Data[CurveCertKey]), 0o400)
	view := "views/._view/4f2a9c/"
	write(view+"bin/flux", fakeFlux, 0o755)
	write(view+"bin/python3.11", "#!/bin/sh\n", 0o755)
	if err := os.Symlink("python3.11", filepath.Join(dir, view+"bin/python3")); err != nil {
		t.Fatal(err)
	}
	write(view+"lib/python3.11/site-packages/flux/__init__.py", "", 0o644)
	write(view+"etc/flux/rc1.d/01-fluxion", "", 0o644)
	write("software/linux-ubuntu22.04-x86_64/flux-core-0.70/bin/flux-broker", "broker", 0o755)
	node := b.podSpec(t).Containers[0]
	argv := append(append([]string(nil), node.Command...), node.Args...)
	write("argv", strings.Join(argv, "\x00")+"\x00", 0o644)
	write("plan", strings.Join(plan, "\n")+"\n", 0o644)
	if prepare != nil {
		prepare(dir)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--mount", "--uts", "--fork", "/bin/bash", "-c", podScript, "pod", dir)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	p := pod{dir: filepath.Join(dir, "out")}
	logBytes, _ := os.ReadFile(filepath.Join(p.dir, "log"))
	p.log = string(logBytes)
	if err != nil {
		t.Fatalf("setting up the pod: %v\n%s\nlog:\n%s", err, out, p.log)
	}
	p.statuses = strings.Fields(p.file(t, "status"))
	if raw, err := os.ReadFile(filepath.Join(p.dir, "flux-calls")); err == nil {
		for _, rec := range strings.Split(strings.TrimSuffix(string(raw), "\x1e"), "\x1e") {
			p.calls = append(p.calls, strings.Split(strings.TrimSuffix(rec, "\x00"), "\x00"))
		}
	}
	return p
}

const fluxConfigDir = "/mnt/flux/config/etc/flux/config"

var brokerOptions = []string{
	"-Scron.directory=/mnt/flux/config/etc/flux/system/cron.d",
	"-Stbon.fanout=256",
	"-Srundir=/mnt/flux/config/run/flux",
	"-Sstatedir=/mnt/flux/config/var/lib/flux",
	"-Slocal-uri=local:///mnt/flux/config/run/flux/local",
	"-Slog-stderr-level=0",
	"-Slog-stderr-mode=local",
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// scriptJob: two nodes, two processes each, four GPUs per node, a command
// whose words need quoting, and an argument from the runtime.
func scriptJob(t *testing.T, command ...string) built {
	t.Helper()
	job := trainertesting.MakeTrainJob("j", "ns").NumNodes(2).NumProcPerNode(2)
	if command != nil {
		job = job.Command(command...).Args("--name", "a b", "--lr=0.1", "it's", "")
	}
	spec := fluxRuntime(1, func(c *corev1.Container) {
		c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
		if command != nil {
			c.Args = []string{"--from-runtime"}
		}
	})
	return build(t, job.Obj(), spec, nil)
}

func TestScriptsLeadBroker(t *testing.T) {
	b := scriptJob(t, "python", "-c", "print('hello world')")
	// The installer and the trainer each run twice: restarted containers.
	p := runPod(t, b, []string{"host j-node-0-0", "init", "init", "entrypoint", "entrypoint"}, nil)
	if diff := cmp.Diff([]string{"0", "0", "0", "0"}, p.statuses); diff != "" {
		t.Fatalf("exit statuses (-want +got):\n%s\nlog:\n%s", diff, p.log)
	}

	// The installer: broker.toml and the hostlist written once, the view
	// and the software copied.
	broker := p.file(t, "mnt-flux/config/etc/flux/config/broker.toml")
	if broker != b.configMap.Data[BrokerConfigKey] {
		t.Errorf("broker.toml is not the ConfigMap's:\n%s", broker)
	}
	var cfg brokerConfig
	if err := toml.Unmarshal([]byte(broker), &cfg); err != nil {
		t.Fatalf("broker.toml: %v", err)
	}
	if cfg.Bootstrap.Hosts[0].Host != "j-node-0-[0-1]" || len(cfg.Bootstrap.Hosts) != 1 ||
		cfg.Bootstrap.DefaultBind != "tcp://eth0:%p" || cfg.Bootstrap.DefaultConnect != "tcp://%h.j.ns.svc.cluster.local:%p" ||
		cfg.QueueManager.QueuePolicy != "fcfs" || cfg.Bootstrap.CurveCert != "/mnt/flux/config/etc/curve/curve.cert" {
		t.Errorf("broker.toml: %+v", cfg)
	}
	if got := p.file(t, "mnt-flux/config/etc/flux/system/hostlist"); got != "j-node-0-[0-1]\n" {
		t.Errorf("hostlist = %q", got)
	}
	for _, f := range []string{"mnt-flux/view/bin/flux", "mnt-flux/view/lib/python3.11/site-packages/flux/__init__.py",
		"mnt-flux/software/linux-ubuntu22.04-x86_64/flux-core-0.70/bin/flux-broker", "mnt-flux/flux-operator-done.txt",
		"opt-software/linux-ubuntu22.04-x86_64/flux-core-0.70/bin/flux-broker", "mnt-flux/flux-operator-complete.txt"} {
		p.file(t, f)
	}
	if _, err := os.Lstat(filepath.Join(p.dir, "mnt-flux/view/bin/python3")); !os.IsNotExist(err) {
		t.Errorf("the view's python3 link is still there (%v)", err)
	}

	// The trainer: the certificate, the resources, the helpers written once.
	cert := filepath.Join(p.dir, "mnt-flux/config/etc/curve/curve.cert")
	if st, err := os.Stat(cert); err != nil || st.Mode().Perm() != 0o400 {
		t.Errorf("curve.cert: %v, mode %v", err, st.Mode().Perm())
	}
	if got := p.file(t, "mnt-flux/config/etc/curve/curve.cert"); got != string(b.secret.Data[CurveCertKey]) {
		t.Errorf("curve.cert is not the Secret's")
	}
	if got := p.file(t, "mnt-flux/config/etc/flux/system/R"); got != "{\"version\": 1, \"fake\": true}\n" {
		t.Errorf("R = %q", got)
	}
	if got := p.file(t, "mnt-flux/load-fluxion.sh"); strings.Count(got, "\n") != 3 {
		t.Errorf("load-fluxion.sh:\n%s", got)
	}
	view := p.file(t, "mnt-flux/flux-view.sh")
	if strings.Count(view, "export PATH=") != 1 || !strings.Contains(view, "/mnt/flux/view/lib/python3.11/site-packages") ||
		!strings.Contains(view, "export fluxsocket=local:///mnt/flux/config/run/flux/local") {
		t.Errorf("flux-view.sh:\n%s", view)
	}

	encode := []string{"R", "encode", "--hosts=j-node-0-[0-1]", "--cores=0-1", "--gpu=0-3"}
	run := concat([]string{"start", "-o", "--config", fluxConfigDir}, brokerOptions,
		[]string{"flux", "run", "-N", "2", "-n", "4", "-g", "4",
			"python", "-c", "print('hello world')", "--name", "a b", "--lr=0.1", "it's", "", "--from-runtime"})
	if diff := cmp.Diff([][]string{encode, run, encode, run}, p.calls); diff != "" {
		t.Errorf("flux calls (-want +got):\n%s\nlog:\n%s", diff, p.log)
	}
}

func TestScriptsFollowerBroker(t *testing.T) {
	b := scriptJob(t, "python", "train.py")
	p := runPod(t, b, []string{"host j-node-0-1", "init", "entrypoint"}, nil)
	if diff := cmp.Diff([]string{"0", "0"}, p.statuses); diff != "" {
		t.Fatalf("exit statuses (-want +got):\n%s\nlog:\n%s", diff, p.log)
	}
	want := [][]string{
		{"R", "encode", "--hosts=j-node-0-[0-1]", "--cores=0-1", "--gpu=0-3"},
		concat([]string{"start", "-o", "--config", fluxConfigDir}, brokerOptions),
	}
	if diff := cmp.Diff(want, p.calls); diff != "" {
		t.Errorf("flux calls (-want +got):\n%s\nlog:\n%s", diff, p.log)
	}
}

func TestScriptsInteractive(t *testing.T) {
	b := scriptJob(t)
	if got := b.podSpec(t).Containers[0].Command; len(got) != 3 || got[2] != "" {
		t.Fatalf("command %q, want an empty command line", got)
	}
	p := runPod(t, b, []string{"host j-node-0-0", "init", "entrypoint"}, nil)
	if diff := cmp.Diff([]string{"0", "0"}, p.statuses); diff != "" {
		t.Fatalf("exit statuses (-want +got):\n%s\nlog:\n%s", diff, p.log)
	}
	want := [][]string{
		{"R", "encode", "--hosts=j-node-0-[0-1]", "--cores=0-1", "--gpu=0-3"},
		concat([]string{"broker", "--config-path", fluxConfigDir}, brokerOptions),
	}
	if diff := cmp.Diff(want, p.calls); diff != "" {
		t.Errorf("flux calls (-want +got):\n%s\nlog:\n%s", diff, p.log)
	}
}

// TestScriptsExitStatus: the lead's status is the job's (Trainer's
// entrypoint always exits 0); a follower retries until its broker ends
// cleanly, so it is not tested with a failing fake.
func TestScriptsExitStatus(t *testing.T) {
	b := scriptJob(t, "false")
	p := runPod(t, b, []string{"host j-node-0-0", "init", "entrypoint"}, nil, "FAKE_FLUX_START_EXIT=3")
	if diff := cmp.Diff([]string{"0", "3"}, p.statuses); diff != "" {
		t.Errorf("exit statuses (-want +got):\n%s\nlog:\n%s", diff, p.log)
	}
	p.file(t, "mnt-flux/flux-operator-complete.txt")
}

// TestScriptsNeedOneView: an installer image without exactly one view
// fails instead of leaving an installation without Flux behind.
func TestScriptsNeedOneView(t *testing.T) {
	b := scriptJob(t, "python", "train.py")
	secondView := func(dir string) {
		if err := os.MkdirAll(filepath.Join(dir, "views/._view/second/bin"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := runPod(t, b, []string{"host j-node-0-0", "init"}, secondView)
	if diff := cmp.Diff([]string{"1"}, p.statuses); diff != "" {
		t.Errorf("exit statuses (-want +got):\n%s\nlog:\n%s", diff, p.log)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "mnt-flux/flux-operator-done.txt")); !os.IsNotExist(err) {
		t.Errorf("the done marker exists (%v)", err)
	}
}

// TestScriptsShellcheck: the rendered scripts pass shellcheck.
func TestScriptsShellcheck(t *testing.T) {
	shellcheck, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck is not installed: ", err)
	}
	b := scriptJob(t, "python", "train.py")
	for _, key := range []string{InitScriptKey, EntrypointScriptKey} {
		cmd := exec.Command(shellcheck, "--shell=bash", "-")
		cmd.Stdin = strings.NewReader(b.configMap.Data[key])
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", key, err, out)
		}
	}
}
