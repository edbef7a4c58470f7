package loginset

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// The SSH host key files, as sshd looks for them in /etc/ssh: Slinky's
// three key types (RSA 4096, ECDSA P-256, Ed25519), each with its public
// half. They are also the keys of the host keys Secret.
const (
	HostKeyRSA         = "ssh_host_rsa_key"
	HostKeyRSAPublic   = HostKeyRSA + ".pub"
	HostKeyECDSA       = "ssh_host_ecdsa_key"
	HostKeyECDSAPublic = HostKeyECDSA + ".pub"
	HostKeyEd25519     = "ssh_host_ed25519_key"
	HostKeyEd25519Pub  = HostKeyEd25519 + ".pub"
	rsaHostKeyBits     = 4096
)

// HostKeyFiles are the Secret keys (and file names) of the host keys, each
// private key followed by its public key.
var HostKeyFiles = []string{
	HostKeyRSA, HostKeyRSAPublic,
	HostKeyECDSA, HostKeyECDSAPublic,
	HostKeyEd25519, HostKeyEd25519Pub,
}

// isPrivateHostKey reports whether file is a private key (mode 0600 in the
// pod) rather than a public one (0644).
func isPrivateHostKey(file string) bool {
	return file == HostKeyRSA || file == HostKeyECDSA || file == HostKeyEd25519
}

// GenerateHostKeys makes a fresh set of SSH host keys: private keys in
// OpenSSH's own format (what ssh-keygen writes; sshd reads it for every key
// type, Ed25519 included) and public keys in authorized_keys format, with
// comment as their comment.
func GenerateHostKeys(comment string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(HostKeyFiles))

	rsaKey, err := rsa.GenerateKey(rand.Reader, rsaHostKeyBits)
	if err != nil {
		return nil, fmt.Errorf("generating the RSA host key: %w", err)
	}
	if out[HostKeyRSA], out[HostKeyRSAPublic], err = encodeHostKey(rsaKey, comment); err != nil {
		return nil, fmt.Errorf("encoding the RSA host key: %w", err)
	}

	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the ECDSA host key: %w", err)
	}
	if out[HostKeyECDSA], out[HostKeyECDSAPublic], err = encodeHostKey(ecKey, comment); err != nil {
		return nil, fmt.Errorf("encoding the ECDSA host key: %w", err)
	}

	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the Ed25519 host key: %w", err)
	}
	if out[HostKeyEd25519], out[HostKeyEd25519Pub], err = encodeHostKey(edKey, comment); err != nil {
		return nil, fmt.Errorf("encoding the Ed25519 host key: %w", err)
	}
	return out, nil
}

// encodeHostKey writes one key pair: the private key, unencrypted, in
// OpenSSH's format (PROTOCOL.key in OpenSSH's sources) with comment stored
// in it, and its public key as the one-line "<type> <base64> <comment>" of
// authorized_keys, without the comment when it is empty — the line
// `ssh-keygen -y` prints for the private key.
func encodeHostKey(priv crypto.Signer, comment string) (privFile, pubFile []byte, err error) {
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, nil, err
	}
	sshPub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		return nil, nil, err
	}
	// MarshalAuthorizedKey writes no comment: the line ends in "\n".
	pubFile = bytes.TrimSuffix(ssh.MarshalAuthorizedKey(sshPub), []byte("\n"))
	if comment != "" {
		pubFile = append(append(pubFile, ' '), comment...)
	}
	return pem.EncodeToMemory(block), append(pubFile, '\n'), nil
}

// missingHostKeys reports which of the host key files data lacks (or holds
// empty).
func missingHostKeys(data map[string][]byte) []string {
	var missing []string
	for _, f := range HostKeyFiles {
		if len(data[f]) == 0 {
			missing = append(missing, f)
		}
	}
	return missing
}
