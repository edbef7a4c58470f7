package loginset

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"math/big"
)

// The SSH host key files, as sshd looks for them in /etc/ssh: Slinky's
// three key types (RSA 4096, ECDSA P-256, Ed25519), each with its public
// half. They are also the keys of the host keys Secret.
const (
	HostKeyRSA          = "ssh_host_rsa_key"
	HostKeyRSAPublic    = HostKeyRSA + ".pub"
	HostKeyECDSA        = "ssh_host_ecdsa_key"
	HostKeyECDSAPublic  = HostKeyECDSA + ".pub"
	HostKeyEd25519      = "ssh_host_ed25519_key"
	HostKeyEd25519Pub   = HostKeyEd25519 + ".pub"
	rsaHostKeyBits      = 4096
	opensshKeyMagic     = "openssh-key-v1\x00"
	opensshPEMType      = "OPENSSH PRIVATE KEY"
	opensshCipherNone   = "none"
	opensshNoneBlockLen = 8
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
	rsaPub := sshString("ssh-rsa", mpint(big.NewInt(int64(rsaKey.E))), mpint(rsaKey.N))
	rsaPriv := sshString("ssh-rsa",
		mpint(rsaKey.N), mpint(big.NewInt(int64(rsaKey.E))), mpint(rsaKey.D),
		mpint(rsaKey.Precomputed.Qinv), mpint(rsaKey.Primes[0]), mpint(rsaKey.Primes[1]))
	out[HostKeyRSA], out[HostKeyRSAPublic] = opensshPrivateKey(rsaPub, rsaPriv, comment), authorizedKey("ssh-rsa", rsaPub, comment)

	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the ECDSA host key: %w", err)
	}
	ecPoint, err := ecKey.PublicKey.Bytes() // uncompressed: 0x04 || X || Y
	if err != nil {
		return nil, fmt.Errorf("encoding the ECDSA host key: %w", err)
	}
	ecScalar, err := ecKey.Bytes()
	if err != nil {
		return nil, fmt.Errorf("encoding the ECDSA host key: %w", err)
	}
	const ecType, ecCurve = "ecdsa-sha2-nistp256", "nistp256"
	ecPub := sshString(ecType, []byte(ecCurve), ecPoint)
	ecPriv := sshString(ecType, []byte(ecCurve), ecPoint, mpint(new(big.Int).SetBytes(ecScalar)))
	out[HostKeyECDSA], out[HostKeyECDSAPublic] = opensshPrivateKey(ecPub, ecPriv, comment), authorizedKey(ecType, ecPub, comment)

	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the Ed25519 host key: %w", err)
	}
	edWirePub := sshString("ssh-ed25519", []byte(edPub))
	// OpenSSH stores the 64-byte seed||public form of the private key.
	edWirePriv := sshString("ssh-ed25519", []byte(edPub), []byte(edPriv))
	out[HostKeyEd25519], out[HostKeyEd25519Pub] = opensshPrivateKey(edWirePub, edWirePriv, comment), authorizedKey("ssh-ed25519", edWirePub, comment)
	return out, nil
}

// opensshPrivateKey wraps one unencrypted key in OpenSSH's private key
// format (PROTOCOL.key in OpenSSH's sources): magic, cipher and KDF "none",
// one public key, and the private section — two equal check words, the key
// fields, the comment, and padding 1, 2, 3, … to the cipher block size.
func opensshPrivateKey(wirePub, privFields []byte, comment string) []byte {
	check := make([]byte, 4)
	_, _ = rand.Read(check)
	var priv bytes.Buffer
	priv.Write(check)
	priv.Write(check)
	priv.Write(privFields)
	priv.Write(sshString(comment))
	for i := byte(1); priv.Len()%opensshNoneBlockLen != 0; i++ {
		priv.WriteByte(i)
	}

	var blob bytes.Buffer
	blob.WriteString(opensshKeyMagic)
	// cipher name, KDF name, empty KDF options
	blob.Write(sshString(opensshCipherNone, opensshCipherNone, ""))
	_ = binary.Write(&blob, binary.BigEndian, uint32(1))
	blob.Write(sshString(wirePub, priv.Bytes()))
	return pem.EncodeToMemory(&pem.Block{Type: opensshPEMType, Bytes: blob.Bytes()})
}

// authorizedKey is the one-line public key form: "<type> <base64> <comment>".
func authorizedKey(keyType string, wirePub []byte, comment string) []byte {
	line := keyType + " " + base64.StdEncoding.EncodeToString(wirePub)
	if comment != "" {
		line += " " + comment
	}
	return []byte(line + "\n")
}

// sshString encodes each field as an SSH wire "string" (a big-endian
// uint32 length, then the bytes) and concatenates them. A string field is
// its text; []byte fields are taken as they are, except those made by
// mpint, which are already encoded.
func sshString(fields ...any) []byte {
	var b bytes.Buffer
	for _, f := range fields {
		var data []byte
		switch v := f.(type) {
		case string:
			data = []byte(v)
		case []byte:
			data = v
		case encodedMpint:
			b.Write(v)
			continue
		default:
			panic(fmt.Sprintf("sshString: unsupported field %T", f))
		}
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.Write(data)
	}
	return b.Bytes()
}

// encodedMpint is an SSH "mpint", already length-prefixed.
type encodedMpint []byte

// mpint encodes a non-negative integer as an SSH mpint: big-endian two's
// complement without leading zero bytes, plus one zero byte when the top
// bit is set so it does not read as negative; zero is the empty string.
func mpint(n *big.Int) encodedMpint {
	mag := n.Bytes()
	if len(mag) > 0 && mag[0]&0x80 != 0 {
		mag = append([]byte{0}, mag...)
	}
	return encodedMpint(sshString(mag))
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
