package loginset

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// generated is one set of host keys shared by the tests below (an RSA 4096
// key takes a while to make).
var generated = func() func(t *testing.T) map[string][]byte {
	var keys map[string][]byte
	return func(t *testing.T) map[string][]byte {
		t.Helper()
		if keys == nil {
			k, err := GenerateHostKeys("root@login")
			if err != nil {
				t.Fatal(err)
			}
			keys = k
		}
		return keys
	}
}()

func TestGenerateHostKeysFormat(t *testing.T) {
	keys := generated(t)
	if missing := missingHostKeys(keys); len(missing) > 0 {
		t.Fatalf("missing %v", missing)
	}
	for file, keyType := range map[string]string{HostKeyRSA: "ssh-rsa", HostKeyECDSA: "ecdsa-sha2-nistp256", HostKeyEd25519: "ssh-ed25519"} {
		block, rest := pem.Decode(keys[file])
		if block == nil || block.Type != "OPENSSH PRIVATE KEY" || len(bytes.TrimSpace(rest)) != 0 {
			t.Fatalf("%s: not one OPENSSH PRIVATE KEY block", file)
		}
		if !bytes.HasPrefix(block.Bytes, []byte("openssh-key-v1\x00")) {
			t.Errorf("%s: no openssh-key-v1 magic", file)
		}
		fields := strings.Fields(string(keys[file+".pub"]))
		if len(fields) != 3 || fields[0] != keyType || fields[2] != "root@login" {
			t.Fatalf("%s.pub = %q, want %q <base64> root@login", file, keys[file+".pub"], keyType)
		}
		wire, err := base64.StdEncoding.DecodeString(fields[1])
		if err != nil {
			t.Fatal(err)
		}
		// The public key is also embedded in the private key file.
		if !bytes.Contains(block.Bytes, wire) {
			t.Errorf("%s: the private key file does not embed its public key", file)
		}
	}
	again, err := GenerateHostKeys("")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again[HostKeyEd25519], keys[HostKeyEd25519]) {
		t.Error("two generations made the same key")
	}
}

func writeHostKeys(t *testing.T, dir string, keys map[string][]byte) {
	t.Helper()
	for _, f := range HostKeyFiles {
		mode := os.FileMode(0o644)
		if isPrivateHostKey(f) {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(dir, f), keys[f], mode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHostKeysReadByOpenSSH has OpenSSH's ssh-keygen read each private key
// and derive its public key, which must be the one generated with it.
func TestHostKeysReadByOpenSSH(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen not installed (apt-get install openssh-client); skipping the check with OpenSSH:", err)
	}
	keys := generated(t)
	dir := t.TempDir()
	writeHostKeys(t, dir, keys)
	for _, f := range []string{HostKeyRSA, HostKeyECDSA, HostKeyEd25519} {
		out, err := exec.Command(keygen, "-y", "-f", filepath.Join(dir, f)).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen -y %s: %v\n%s", f, err, out)
		}
		want := strings.Fields(string(keys[f+".pub"]))[:2]
		if got := strings.Fields(string(out)); len(got) < 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: ssh-keygen derives %q, want %q", f, out, want)
		}
	}
}

// TestSshdAcceptsConfigAndHostKeys runs Debian's sshd in test mode on the
// generated sshd_config (with extra config) and host keys, as the login
// pod has them.
func TestSshdAcceptsConfigAndHostKeys(t *testing.T) {
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		if sshd, err = exec.LookPath("sshd"); err != nil {
			t.Skip("sshd not installed (apt-get install openssh-server); skipping the check with sshd:", err)
		}
	}
	if os.Geteuid() == 0 {
		// sshd checks its privilege separation directory even in test
		// mode; the login image's entrypoint makes it the same way.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Logf("cannot make /run/sshd: %v", err)
		}
	}
	keys := generated(t)
	dir := t.TempDir()
	writeHostKeys(t, dir, keys)
	for _, extra := range []string{
		"",
		"PermitRootLogin prohibit-password\nX11Forwarding no\nSubsystem sftp internal-sftp -l INFO\nMatch User alice\n  AllowTcpForwarding no\n",
	} {
		conf := filepath.Join(dir, "sshd_config")
		if err := os.WriteFile(conf, []byte(BuildSshdConfig(extra, 2222)), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"-t", "-f", conf}
		for _, f := range []string{HostKeyRSA, HostKeyECDSA, HostKeyEd25519} {
			args = append(args, "-h", filepath.Join(dir, f))
		}
		out, err := exec.Command(sshd, args...).CombinedOutput()
		if strings.Contains(string(out), "privilege separation directory") {
			t.Skipf("sshd cannot run its checks here: %s", out)
		}
		if err != nil {
			t.Errorf("sshd -t rejects the generated config (extra %q) or host keys: %v\n%s", extra, err, out)
		}
		// -T prints the effective settings: the user's value wins.
		out, err = exec.Command(sshd, append([]string{"-T"}, args[1:]...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("sshd -T: %v\n%s", err, out)
		}
		want := "x11forwarding yes"
		if extra != "" {
			want = "x11forwarding no"
		}
		if !strings.Contains(string(out), want+"\n") || !strings.Contains(string(out), "port 2222\n") {
			t.Errorf("sshd's effective config lacks %q or port 2222:\n%s", want, out)
		}
	}
}
