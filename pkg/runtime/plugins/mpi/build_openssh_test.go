package mpi

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"

	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// TestSSHAuthSecretReadByXCryptoSSH reads the generated key pair with
// golang.org/x/crypto/ssh: the public key the private key yields must be
// the ssh-publickey line, which has no comment, options or further lines,
// and a signature by the private key must verify with it.
func TestSSHAuthSecretReadByXCryptoSSH(t *testing.T) {
	secret, err := newSSHAuthSecret(trainertesting.MakeTrainJob("j", "default").Obj())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(secret.Data[corev1.SSHAuthPrivateKey])
	if err != nil {
		t.Fatalf("ssh.ParsePrivateKey: %v", err)
	}
	pub, comment, options, rest, err := ssh.ParseAuthorizedKey(secret.Data[SSHPublicKey])
	if err != nil {
		t.Fatalf("ssh.ParseAuthorizedKey: %v", err)
	}
	if pub.Type() != ssh.KeyAlgoECDSA521 || comment != "" || len(options) != 0 || len(rest) != 0 {
		t.Errorf("ssh-publickey = %q: type %q, comment %q, options %q, rest %q; want a bare %s key",
			secret.Data[SSHPublicKey], pub.Type(), comment, options, rest, ssh.KeyAlgoECDSA521)
	}
	if !bytes.Equal(signer.PublicKey().Marshal(), pub.Marshal()) {
		t.Error("ssh-publickey is not the public key of ssh-privatekey")
	}
	sig, err := signer.Sign(rand.Reader, []byte("mpi"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Verify([]byte("mpi"), sig); err != nil {
		t.Errorf("a signature by ssh-privatekey does not verify with ssh-publickey: %v", err)
	}
}

// TestSSHAuthSecretMatchesSshKeygen has OpenSSH's ssh-keygen read the
// private key as the pods mount it (id_rsa, alone in its directory): the
// public key line it derives must be ssh-publickey (id_rsa.pub,
// authorized_keys) byte for byte.
func TestSSHAuthSecretMatchesSshKeygen(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen is not on PATH (apt-get install openssh-client), so the key cannot be checked against OpenSSH:", err)
	}
	secret, err := newSSHAuthSecret(trainertesting.MakeTrainJob("j", "default").Obj())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "id_rsa")
	// ssh-keygen refuses private keys others can read.
	if err := os.WriteFile(file, secret.Data[corev1.SSHAuthPrivateKey], 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(keygen, "-y", "-f", file).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen -y -f id_rsa: %v\n%s", err, out)
	}
	if !bytes.Equal(out, secret.Data[SSHPublicKey]) {
		t.Errorf("ssh-keygen -y prints\n%q\nbut ssh-publickey is\n%q", out, secret.Data[SSHPublicKey])
	}
}
