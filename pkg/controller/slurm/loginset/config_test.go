package loginset

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"testing"

	"sigs.k8s.io/yaml"
)

func TestBuildSshdConfig(t *testing.T) {
	tests := []struct {
		name          string
		extra         string
		port          int32
		want, notWant []string
	}{
		{
			name:    "defaults",
			want:    []string{"Include /etc/ssh/sshd_config.d/*.conf\n", "UsePAM yes\n", "X11Forwarding yes\n", "Subsystem sftp internal-sftp\n"},
			notWant: []string{"Port ", "extraSshdConfig"},
		},
		{
			name:  "extra config is appended after the defaults",
			extra: "PermitRootLogin prohibit-password\nMatch User alice\n  X11Forwarding no\n",
			want:  []string{"X11Forwarding yes\n", "# spec.extraSshdConfig\nPermitRootLogin prohibit-password\nMatch User alice\n  X11Forwarding no\n"},
		},
		{
			// sshd keeps the first value of a keyword, and refuses a second
			// sftp subsystem: the user's setting replaces the default.
			name:    "a default the user sets globally is left out",
			extra:   "x11forwarding no\nSubsystem sftp /usr/lib/openssh/sftp-server\n",
			want:    []string{"UsePAM yes\n", "x11forwarding no\n", "Subsystem sftp /usr/lib/openssh/sftp-server\n"},
			notWant: []string{"X11Forwarding yes", "internal-sftp"},
		},
		{
			name:  "keyword=value form counts too",
			extra: "UsePAM=no\n",
			want:  []string{"UsePAM=no\n"}, notWant: []string{"UsePAM yes"},
		},
		{
			name: "a moved login port is sshd's port",
			port: 2222,
			want: []string{"Port 2222\n"},
		},
		{
			name:    "the user's Port wins over the login port",
			port:    2222,
			extra:   "Port 2022",
			want:    []string{"Port 2022\n"},
			notWant: []string{"Port 2222"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := BuildSshdConfig(tc.extra, tc.port)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(got, nw) {
					t.Errorf("unexpected %q in\n%s", nw, got)
				}
			}
			if !strings.HasPrefix(strings.SplitN(got, "\n", 3)[1], "Include ") {
				t.Errorf("the image's drop-ins must be read first:\n%s", got)
			}
		})
	}
}

func TestBuildAuthorizedKeys(t *testing.T) {
	keys := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ9 alice\nssh-rsa AAAAB3NzaC1yc2E bob"
	got := BuildAuthorizedKeys("  " + keys + "\n\n")
	if !strings.HasSuffix(got, keys+"\n") {
		t.Errorf("keys not kept line for line:\n%s", got)
	}
	for _, line := range strings.Split(strings.TrimSpace(BuildAuthorizedKeys("")), "\n") {
		if !strings.HasPrefix(line, "#") {
			t.Errorf("no keys must yield comments only, got %q", line)
		}
	}
}

// TestDefaultSssdConf checks the default sssd.conf the way sssd reads it:
// an [sssd] section naming its services and domains, and for each domain
// a [domain/<name>] section with an id_provider.
func TestDefaultSssdConf(t *testing.T) {
	sections := map[string]map[string]string{}
	var current map[string]string
	for _, raw := range strings.Split(DefaultSssdConf, "\n") {
		line := strings.TrimSpace(raw)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			current = map[string]string{}
			sections[strings.Trim(line, "[]")] = current
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || current == nil {
				t.Fatalf("not a key = value line inside a section: %q", raw)
			}
			current[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	main := sections["sssd"]
	if main == nil || main["services"] == "" || main["domains"] == "" {
		t.Fatalf("[sssd] must name services and domains: %v", main)
	}
	for _, svc := range strings.Split(main["services"], ",") {
		if _, ok := sections[strings.TrimSpace(svc)]; !ok {
			t.Errorf("service %q has no section", svc)
		}
	}
	for _, d := range strings.Split(main["domains"], ",") {
		dom := sections["domain/"+strings.TrimSpace(d)]
		if dom == nil || dom["id_provider"] == "" {
			t.Errorf("domain %q needs a [domain/%s] section with an id_provider", d, d)
		}
	}
	for _, local := range []string{"root", "slurm"} {
		if !strings.Contains(sections["nss"]["filter_users"], local) {
			t.Errorf("%s must stay a local user (filter_users)", local)
		}
	}
}

// TestInitconfScript runs the initconf script with a POSIX shell: the key
// and .conf files are copied next to nothing else, the key readable by its
// owner only, and (as root) owned by the slurm user.
func TestInitconfScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to run the initconf script:", err)
	}
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "etc", "slurm")
	for name, data := range map[string]string{"slurm.key": "secret", "cgroup.conf": "CgroupPlugin=autodetect\n", "README": "not copied"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(sh, "-c", initconfScript)
	cmd.Env = append(os.Environ(), "SLURM_MOUNT="+src, "SLURM_DIR="+dst, "SLURM_USER_UID=401", "SLURM_USER_GID=401")
	if os.Geteuid() != 0 {
		// chown to another user needs root; keep the files the caller's.
		cmd.Env = append(cmd.Env, "SLURM_USER_UID="+strconv.Itoa(os.Geteuid()), "SLURM_USER_GID="+strconv.Itoa(os.Getegid()))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("initconf failed: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "cgroup.conf,slurm.key" {
		t.Fatalf("copied %v, want cgroup.conf and slurm.key", names)
	}
	for name, mode := range map[string]os.FileMode{"slurm.key": 0o600, "cgroup.conf": 0o644} {
		fi, err := os.Stat(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && (st.Uid != 401 || st.Gid != 401) {
			t.Errorf("%s owned by %d:%d, want the slurm user 401:401", name, st.Uid, st.Gid)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "slurm.key")); string(got) != "secret" {
		t.Errorf("slurm.key content %q", got)
	}
}

// TestSampleCarriesDefaultSssdConf keeps the sample's sssd.conf Secret the
// default, and its LoginSet pointing at it and at the Controller sample.
func TestSampleCarriesDefaultSssdConf(t *testing.T) {
	data, err := os.ReadFile("../../../../config/samples/slinky_v1beta1_loginset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var secretName, sssdRef, controllerName string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			StringData map[string]string `json:"stringData"`
			Spec       struct {
				ControllerRef struct{ Name string }      `json:"controllerRef"`
				SssdConfRef   struct{ Name, Key string } `json:"sssdConfRef"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		switch obj.Kind {
		case "Secret":
			secretName = obj.Metadata.Name
			if got := obj.StringData["sssd.conf"]; got != DefaultSssdConf {
				t.Errorf("the sample's sssd.conf differs from DefaultSssdConf:\n%s", got)
			}
		case "LoginSet":
			controllerName = obj.Spec.ControllerRef.Name
			if obj.Spec.SssdConfRef.Key != "sssd.conf" {
				t.Errorf("sssdConfRef.key = %q", obj.Spec.SssdConfRef.Key)
			}
			sssdRef = obj.Spec.SssdConfRef.Name
		}
	}
	if secretName == "" || sssdRef != secretName {
		t.Errorf("sssdConfRef.name %q, the sample's Secret is %q", sssdRef, secretName)
	}
	controller, err := os.ReadFile("../../../../config/samples/slinky_v1beta1_controller.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(controller), "kind: Controller\nmetadata:\n  name: "+controllerName+"\n") {
		t.Errorf("the Controller sample is not named %q", controllerName)
	}
}
