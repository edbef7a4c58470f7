package loginset

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// The host keys GenerateHostKeys makes: each private key file, its public
// key file, the SSH key type and its size in bits.
var hostKeyPairs = []struct {
	priv, pub, keyType string
	bits               int
}{
	{HostKeyRSA, HostKeyRSAPublic, ssh.KeyAlgoRSA, rsaHostKeyBits},
	{HostKeyECDSA, HostKeyECDSAPublic, ssh.KeyAlgoECDSA256, 256},
	{HostKeyEd25519, HostKeyEd25519Pub, ssh.KeyAlgoED25519, 256},
}

// generatedNoComment is one set of host keys without a comment, shared by
// the tests below.
var generatedNoComment = func() func(t *testing.T) map[string][]byte {
	var keys map[string][]byte
	return func(t *testing.T) map[string][]byte {
		t.Helper()
		if keys == nil {
			k, err := GenerateHostKeys("")
			if err != nil {
				t.Fatal(err)
			}
			keys = k
		}
		return keys
	}
}()

// hostKeySets are the generated key sets by their comment.
func hostKeySets(t *testing.T) map[string]map[string][]byte {
	return map[string]map[string][]byte{"root@login": generated(t), "": generatedNoComment(t)}
}

// TestHostKeysReadByXCryptoSSH reads every generated file with
// golang.org/x/crypto/ssh: each private key must parse, be of its file's
// type and size, and its public key — derived from the private fields —
// must be the one in the .pub file, which carries the comment and nothing
// else; a signature made with the private key must verify with the .pub
// key.
func TestHostKeysReadByXCryptoSSH(t *testing.T) {
	for comment, keys := range hostKeySets(t) {
		for _, kp := range hostKeyPairs {
			signer, err := ssh.ParsePrivateKey(keys[kp.priv])
			if err != nil {
				t.Fatalf("comment %q: ssh.ParsePrivateKey(%s): %v", comment, kp.priv, err)
			}
			raw, err := ssh.ParseRawPrivateKey(keys[kp.priv])
			if err != nil {
				t.Fatalf("comment %q: ssh.ParseRawPrivateKey(%s): %v", comment, kp.priv, err)
			}
			switch k := raw.(type) {
			case *rsa.PrivateKey:
				if kp.keyType != ssh.KeyAlgoRSA || k.N.BitLen() != kp.bits {
					t.Errorf("%s: an RSA key of %d bits, want %s of %d", kp.priv, k.N.BitLen(), kp.keyType, kp.bits)
				}
				if err := k.Validate(); err != nil {
					t.Errorf("%s: invalid RSA key: %v", kp.priv, err)
				}
			case *ecdsa.PrivateKey:
				if kp.keyType != ssh.KeyAlgoECDSA256 || k.Curve != elliptic.P256() {
					t.Errorf("%s: an ECDSA key on %s, want %s", kp.priv, k.Curve.Params().Name, kp.keyType)
				}
			case *ed25519.PrivateKey:
				if kp.keyType != ssh.KeyAlgoED25519 {
					t.Errorf("%s: an Ed25519 key, want %s", kp.priv, kp.keyType)
				}
			default:
				t.Errorf("%s: a %T, want %s", kp.priv, raw, kp.keyType)
			}

			pub, gotComment, options, rest, err := ssh.ParseAuthorizedKey(keys[kp.pub])
			if err != nil {
				t.Fatalf("comment %q: ssh.ParseAuthorizedKey(%s): %v", comment, kp.pub, err)
			}
			if pub.Type() != kp.keyType || gotComment != comment || len(options) != 0 || len(rest) != 0 {
				t.Errorf("%s = %q: type %q, comment %q, options %q, rest %q; want type %q, comment %q and nothing else",
					kp.pub, keys[kp.pub], pub.Type(), gotComment, options, rest, kp.keyType, comment)
			}
			if !bytes.Equal(signer.PublicKey().Marshal(), pub.Marshal()) {
				t.Errorf("comment %q: %s is not the public key of %s", comment, kp.pub, kp.priv)
			}
			data := []byte("host key check")
			sig, err := signer.Sign(rand.Reader, data)
			if err != nil {
				t.Fatal(err)
			}
			if err := pub.Verify(data, sig); err != nil {
				t.Errorf("comment %q: a signature by %s does not verify with %s: %v", comment, kp.priv, kp.pub, err)
			}
		}
	}
	// Each generation makes new keys.
	for _, kp := range hostKeyPairs {
		if bytes.Equal(generated(t)[kp.pub], generatedNoComment(t)[kp.pub]) {
			t.Errorf("two generations made the same %s", kp.pub)
		}
	}
}

// TestHostKeysMatchSshKeygen has OpenSSH's ssh-keygen read each private
// key, alone in its directory so no .pub file can stand in for it: the
// public key it derives, with the comment stored in the private key, must
// be the .pub file byte for byte, and the key size and fingerprint it
// reports must be the .pub key's as x/crypto/ssh computes it.
func TestHostKeysMatchSshKeygen(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen is not on PATH (apt-get install openssh-client), so the keys cannot be checked against OpenSSH:", err)
	}
	for comment, keys := range hostKeySets(t) {
		dir := t.TempDir()
		for _, kp := range hostKeyPairs {
			file := filepath.Join(dir, kp.priv)
			// ssh-keygen refuses private keys others can read.
			if err := os.WriteFile(file, keys[kp.priv], 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(keygen, "-y", "-f", file).CombinedOutput()
			if err != nil {
				t.Fatalf("ssh-keygen -y -f %s (comment %q): %v\n%s", kp.priv, comment, err, out)
			}
			if !bytes.Equal(out, keys[kp.pub]) {
				t.Errorf("comment %q: ssh-keygen -y -f %s prints\n%q\nbut %s is\n%q", comment, kp.priv, out, kp.pub, keys[kp.pub])
			}

			out, err = exec.Command(keygen, "-l", "-E", "sha256", "-f", file).CombinedOutput()
			if err != nil {
				t.Fatalf("ssh-keygen -l -f %s (comment %q): %v\n%s", kp.priv, comment, err, out)
			}
			pub, _, _, _, err := ssh.ParseAuthorizedKey(keys[kp.pub])
			if err != nil {
				t.Fatal(err)
			}
			// "<bits> <fingerprint> <comment> (<TYPE>)"
			fields := strings.Fields(string(out))
			if len(fields) < 3 || fields[0] != strconv.Itoa(kp.bits) || fields[1] != ssh.FingerprintSHA256(pub) {
				t.Errorf("comment %q: ssh-keygen -l -f %s prints %q, want %d bits and fingerprint %s",
					comment, kp.priv, out, kp.bits, ssh.FingerprintSHA256(pub))
			}
		}
	}
}
