package flux

import (
	"bytes"
	"crypto/ecdh"
	"regexp"
	"strings"
	"testing"
)

// TestEncodeZ85 checks the encoder against ZeroMQ RFC 32's test vector.
func TestEncodeZ85(t *testing.T) {
	cases := map[string]struct {
		in   []byte
		want string
	}{
		"RFC 32 test vector": {in: []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}, want: "HelloWorld"},
		"zeros":              {in: []byte{0, 0, 0, 0}, want: "00000"},
		"all ones":           {in: []byte{0xff, 0xff, 0xff, 0xff}, want: "%nSc0"},
		"empty":              {in: nil, want: ""},
	}
	for name, tc := range cases {
		got, err := EncodeZ85(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s: EncodeZ85 = %q, %v; want %q", name, got, err, tc.want)
		}
	}
	if _, err := EncodeZ85([]byte{1, 2, 3}); err == nil {
		t.Error("3 bytes: want an error")
	}
}

// decodeZ85 is the inverse of EncodeZ85, for the tests.
func decodeZ85(t *testing.T, s string) []byte {
	t.Helper()
	if len(s)%5 != 0 {
		t.Fatalf("%q: length %d", s, len(s))
	}
	var out []byte
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for _, c := range []byte(s[i : i+5]) {
			d := strings.IndexByte(z85Alphabet, c)
			if d < 0 {
				t.Fatalf("%q: %q is not Z85", s, c)
			}
			v = v*85 + uint64(d)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out
}

func TestZ85RoundTrip(t *testing.T) {
	in := []byte("0123456789abcdef0123456789abcdef")
	enc, err := EncodeZ85(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeZ85(t, enc); !bytes.Equal(got, in) {
		t.Errorf("round trip: %x, want %x", got, in)
	}
}

var certKey = regexp.MustCompile(`(?m)^    (public|secret)-key = "([^"]*)"$`)

// checkCert: a ZeroMQ secret certificate named name whose keys are Z85
// X25519 keys of one pair.
func checkCert(t *testing.T, cert, name string) {
	t.Helper()
	var structure []string
	for _, l := range strings.Split(cert, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		structure = append(structure, certKey.ReplaceAllString(l, "    $1-key = KEY"))
	}
	want := []string{"metadata", `    name = "` + name + `"`, "curve", "    public-key = KEY", "    secret-key = KEY"}
	if strings.Join(structure, "\n") != strings.Join(want, "\n") {
		t.Fatalf("certificate lines:\n%s\nwant:\n%s", strings.Join(structure, "\n"), strings.Join(want, "\n"))
	}
	keys := map[string][]byte{}
	for _, m := range certKey.FindAllStringSubmatch(cert, -1) {
		if len(m[2]) != 40 {
			t.Errorf("%s key %q: %d characters, want 40", m[1], m[2], len(m[2]))
		}
		keys[m[1]] = decodeZ85(t, m[2])
	}
	priv, err := ecdh.X25519().NewPrivateKey(keys["secret"])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(priv.PublicKey().Bytes(), keys["public"]) {
		t.Error("the public key is not the secret key's")
	}
}

func TestNewCurveCertificate(t *testing.T) {
	a, err := NewCurveCertificate("job")
	if err != nil {
		t.Fatal(err)
	}
	checkCert(t, a, "job")
	b, err := NewCurveCertificate("job")
	if err != nil {
		t.Fatal(err)
	}
	if certKey.FindString(a) == certKey.FindString(b) {
		t.Error("two certificates share a key: the key is not random")
	}
}
