package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

const testTag = "ghcr.io/gantry-dev/gantry:0.1.0"

var fakeManager = []byte("#!fake manager binary\x00\x01\x02")

// build runs imagebuild on a fake manager binary and returns its stdout.
func build(t *testing.T, out, sourceDateEpoch string, extra ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(bin, fakeManager, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--binary", "linux/amd64=" + bin, "--tag", testTag, "--output", out}, extra...)
	var stdout, stderr bytes.Buffer
	if err := run(args, sourceDateEpoch, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
	}
	return stdout.String()
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReproducible(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	outA, outB := build(t, a, ""), build(t, b, "")
	if !bytes.Equal(readFile(t, a), readFile(t, b)) {
		t.Error("two builds of the same binary gave different tarballs")
	}
	digest := func(out string) string {
		f := strings.Fields(out)
		if len(f) < 4 || f[0] != "digest:" || f[2] != "id:" || !strings.HasPrefix(f[1], "sha256:") || !strings.HasPrefix(f[3], "sha256:") {
			t.Fatalf("output %q: want \"digest: sha256:... id: sha256:...\"", out)
		}
		return f[1]
	}
	if digest(outA) != digest(outB) {
		t.Errorf("digests differ: %s vs %s", digest(outA), digest(outB))
	}
	// manifest.json carries no manifest (readers synthesize one), so only
	// the image ID (config digest) is comparable here; TestArchiveLayout
	// checks the manifest digest against index.json.
	img, err := tarball.ImageFromPath(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := img.ConfigName(); !strings.Contains(outA, " id: "+id.String()+" ") {
		t.Errorf("output %q does not carry the config digest %s", outA, id)
	}

	// The digest must depend on the inputs: another time gives another image.
	c := filepath.Join(dir, "c.tar")
	if outC := build(t, c, "1700000000"); digest(outC) == digest(outA) {
		t.Error("SOURCE_DATE_EPOCH did not change the digest")
	}
}

// tarFiles reads a tar stream into name -> header and name -> content, and
// checks the entries are sorted with fixed metadata.
func tarFiles(t *testing.T, r io.Reader, mtime time.Time) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	hdrs, data := map[string]*tar.Header{}, map[string][]byte{}
	var names []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(mtime) {
			t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, mtime)
		}
		if h.Uid == 0 && (h.Gid != 0 || (h.Uname != "" && h.Uname != "root")) {
			t.Errorf("%s: owner %d:%d %s:%s, want root", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		names = append(names, h.Name)
		hdrs[h.Name], data[h.Name] = h, b
	}
	if !slices.IsSorted(names) {
		t.Errorf("tar entries not sorted: %v", names)
	}
	return hdrs, data
}

func TestImageContents(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gantry.tar")
	build(t, out, "")
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Errorf("invalid image: %v", err)
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/manager"}) || c.WorkingDir != "/" || len(c.Cmd) != 0 {
		t.Errorf("config user %q entrypoint %q cmd %q workdir %q", c.User, c.Entrypoint, c.Cmd, c.WorkingDir)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
	}
	if !cfg.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("created %v, want the Unix epoch", cfg.Created.Time)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/gantry-dev/gantry",
		"org.opencontainers.image.title":    "gantry",
		"org.opencontainers.image.version":  "0.1.0",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	for k, v := range wantLabels {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	hdrs, data := map[string]*tar.Header{}, map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		h, d := tarFiles(t, rc, time.Unix(0, 0))
		rc.Close()
		for n := range h {
			if _, dup := hdrs[n]; dup {
				t.Errorf("%s in two layers", n)
			}
			hdrs[n], data[n] = h[n], d[n]
		}
	}

	for _, f := range []struct {
		name     string
		mode     int64
		typ      byte
		uid      int
		contains string
	}{
		{"manager", 0o755, tar.TypeReg, 0, string(fakeManager)},
		{"etc/passwd", 0o644, tar.TypeReg, 0, "nonroot:x:65532:65532:"},
		{"etc/group", 0o644, tar.TypeReg, 0, "nonroot:x:65532:"},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, tar.TypeReg, 0, "-----BEGIN CERTIFICATE-----"},
		{"tmp/", 0o1777, tar.TypeDir, 0, ""},
		{"home/nonroot/", 0o700, tar.TypeDir, 65532, ""},
	} {
		h, ok := hdrs[f.name]
		if !ok {
			t.Errorf("%s missing from the image", f.name)
			continue
		}
		if h.Mode != f.mode || h.Typeflag != f.typ || h.Uid != f.uid || h.Gid != f.uid {
			t.Errorf("%s: mode %o type %c owner %d:%d, want %o %c %d:%d", f.name, h.Mode, h.Typeflag, h.Uid, h.Gid, f.mode, f.typ, f.uid, f.uid)
		}
		if !strings.Contains(string(data[f.name]), f.contains) {
			t.Errorf("%s does not contain %q", f.name, f.contains)
		}
	}
	if !strings.Contains(string(data["etc/passwd"]), "root:x:0:0:") || !strings.Contains(string(data["etc/group"]), "root:x:0:") {
		t.Error("/etc/passwd or /etc/group has no root entry")
	}
	// Every entry's parent directory is in the image too.
	for n := range hdrs {
		if p := filepath.Dir(strings.TrimSuffix(n, "/")); p != "." && hdrs[p+"/"] == nil {
			t.Errorf("%s: parent directory %s/ missing", n, p)
		}
	}

	// The CA bundle: Mozilla's unconstrained roots, every block a certificate.
	pemData := data["etc/ssl/certs/ca-certificates.crt"]
	var certs []*x509.Certificate
	for rest := pemData; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			if len(bytes.TrimSpace(rest)) != 0 {
				t.Error("CA bundle has trailing non-PEM data")
			}
			break
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("CA bundle: %v", err)
		}
		certs = append(certs, cert)
	}
	if len(certs) < 100 {
		t.Errorf("CA bundle has %d certificates, want at least 100", len(certs))
	}
	for r := range bundle.Roots() {
		inPEM := slices.ContainsFunc(certs, func(c *x509.Certificate) bool { return bytes.Equal(c.Raw, r.Certificate) })
		if inPEM == (r.Constraint != nil) {
			t.Errorf("root in PEM = %v, constrained = %v; want exactly the unconstrained roots", inPEM, r.Constraint != nil)
		}
	}
}

func TestArchiveLayout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gantry.tar")
	stdout := build(t, out, "1700000000")
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdrs, data := tarFiles(t, f, time.Unix(1700000000, 0))

	// docker load reads manifest.json.
	var dm tarball.Manifest
	if err := json.Unmarshal(data["manifest.json"], &dm); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(dm) != 1 || !slices.Equal(dm[0].RepoTags, []string{testTag}) {
		t.Fatalf("manifest.json = %+v, want one image tagged %s", dm, testTag)
	}
	for _, p := range append([]string{dm[0].Config}, dm[0].Layers...) {
		if hdrs[p] == nil {
			t.Errorf("manifest.json names %s, not in the archive", p)
		}
	}

	// Every blob's name is its sha256.
	for n, b := range data {
		if hex0, ok := strings.CutPrefix(n, "blobs/sha256/"); ok && hex0 != "" {
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hex0 {
				t.Errorf("%s has sha256 %x", n, sum)
			}
		}
	}

	// containerd (kind load) reads the OCI layout: index.json names the image.
	if string(data["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", data["oci-layout"])
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(data["index.json"], &idx); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(idx.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(idx.Manifests))
	}
	m := idx.Manifests[0]
	if !strings.Contains(stdout, "digest: "+m.Digest.String()+" ") {
		t.Errorf("index.json points at %s, output says %q", m.Digest, stdout)
	}
	if m.Annotations["io.containerd.image.name"] != testTag || m.Annotations["org.opencontainers.image.ref.name"] != "0.1.0" {
		t.Errorf("index.json annotations %v", m.Annotations)
	}
	if m.Platform == nil || m.Platform.String() != "linux/amd64" {
		t.Errorf("index.json platform %v", m.Platform)
	}

	// The OCI layout, unpacked, is a valid image: the same one manifest.json has.
	dir := t.TempDir()
	for n, h := range hdrs {
		p := filepath.Join(dir, n)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data[n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	li, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	ociImg, err := li.Image(m.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(ociImg); err != nil {
		t.Errorf("OCI layout image invalid: %v", err)
	}
	// Same config and layers behind both (the manifest digests differ:
	// go-containerregistry synthesizes a Docker-typed manifest from
	// manifest.json).
	dockerImg, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	same := func(i v1.Image) []v1.Hash {
		m, err := i.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		h := []v1.Hash{m.Config.Digest}
		for _, l := range m.Layers {
			h = append(h, l.Digest)
		}
		return h
	}
	if a, b := same(dockerImg), same(ociImg); !slices.Equal(a, b) || len(a) != 3 {
		t.Errorf("manifest.json image has config+layers %v, index.json image %v", a, b)
	}
}

func TestSeveralPlatforms(t *testing.T) {
	dir := t.TempDir()
	amd, arm := filepath.Join(dir, "amd64"), filepath.Join(dir, "arm64")
	for _, p := range []string{amd, arm} {
		if err := os.WriteFile(p, []byte(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	err := run([]string{"--tag", testTag, "--output", filepath.Join(dir, "gantry.tar"),
		"--binary", "linux/arm64=" + arm, "--binary", "linux/amd64=" + amd}, "", &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("output %q: want one line per platform", stdout.String())
	}
	for _, arch := range []string{"amd64", "arm64"} {
		out := filepath.Join(dir, "gantry-linux-"+arch+".tar")
		img, err := tarball.ImageFromPath(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != arch {
			t.Errorf("%s: architecture %s", out, cfg.Architecture)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want string // platform, path; "" = error
	}{
		{"platform", "linux/arm64=bin/m", "linux/arm64 bin/m"},
		{"variant", "linux/arm/v7=m", "linux/arm/v7 m"},
		{"default platform", "bin/m", "linux/amd64 bin/m"},
		{"no arch", "linux=m", ""},
		{"no path", "linux/amd64=", ""},
		{"os version", "windows/amd64:10.0=m", ""},
	} {
		b, err := parseBinary(tc.in)
		got := ""
		if err == nil {
			got = b.platform.String() + " " + b.path
		}
		if got != tc.want {
			t.Errorf("%s: parseBinary(%q) = %q (%v), want %q", tc.name, tc.in, got, err, tc.want)
		}
	}

	if got := outputPath("bin/image/gantry-0.1.0.tar", v1.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}, true); got != "bin/image/gantry-0.1.0-linux-arm-v7.tar" {
		t.Errorf("outputPath = %s", got)
	}
	if got := outputPath("x.tar", v1.Platform{OS: "linux", Architecture: "amd64"}, false); got != "x.tar" {
		t.Errorf("outputPath single = %s", got)
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "m")
	if err := os.WriteFile(bin, fakeManager, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o.tar")
	for _, tc := range []struct {
		name  string
		args  []string
		epoch string
	}{
		{"no tag", []string{"--binary", bin, "--output", out}, ""},
		{"tag without version", []string{"--binary", bin, "--output", out, "--tag", "ghcr.io/gantry-dev/gantry"}, ""},
		{"no binary", []string{"--output", out, "--tag", testTag}, ""},
		{"missing binary file", []string{"--binary", filepath.Join(dir, "nope"), "--output", out, "--tag", testTag}, ""},
		{"platform twice", []string{"--binary", bin, "--binary", "linux/amd64=" + bin, "--output", out, "--tag", testTag}, ""},
		{"bad SOURCE_DATE_EPOCH", []string{"--binary", bin, "--output", out, "--tag", testTag}, "yesterday"},
		{"stray argument", []string{"--binary", bin, "--output", out, "--tag", testTag, "extra"}, ""},
	} {
		if err := run(tc.args, tc.epoch, io.Discard, io.Discard); err == nil {
			t.Errorf("%s: run succeeded, want an error", tc.name)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s behind (%v)", out, err)
	}

	// --created wins over SOURCE_DATE_EPOCH; --version sets the label.
	build(t, out, "1700000000", "--created", "42", "--version", "1.2.3")
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Created.Time.Equal(time.Unix(42, 0)) || cfg.Config.Labels["org.opencontainers.image.version"] != "1.2.3" {
		t.Errorf("created %v version label %q, want 42s and 1.2.3", cfg.Created.Time, cfg.Config.Labels["org.opencontainers.image.version"])
	}
}

func TestLayerTarSortsAndFixesMetadata(t *testing.T) {
	mtime := time.Unix(7, 0)
	raw, err := layerTar([]file{{name: "b", mode: 0o644, data: []byte("b")}, {name: "a/", mode: 0o755}, {name: "a/x", mode: 0o600, uid: 65532, gid: 65532}}, mtime)
	if err != nil {
		t.Fatal(err)
	}
	hdrs, _ := tarFiles(t, bytes.NewReader(raw), mtime)
	if h := hdrs["a/x"]; h == nil || h.Uname != "nonroot" || h.Gname != "nonroot" || h.Mode != 0o600 {
		t.Errorf("a/x header %+v", h)
	}
	if h := hdrs["a/"]; h == nil || h.Typeflag != tar.TypeDir || h.Uname != "root" {
		t.Errorf("a/ header %+v", h)
	}
}

func TestContainerdName(t *testing.T) {
	for in, want := range map[string]string{
		testTag:                   testTag,
		"gantry:dev":              "docker.io/library/gantry:dev",
		"example.com/x/gantry:v1": "example.com/x/gantry:v1",
	} {
		tag, err := name.NewTag(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := containerdName(tag); got != want {
			t.Errorf("containerdName(%s) = %s, want %s", in, got, want)
		}
	}
}
