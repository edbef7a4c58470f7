package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const testTag = "gantry.local/testbase:1"

var isRoot = os.Geteuid() == 0

// makeTree lays out a small root file system with everything the layer
// writer treats specially and returns its path.
func makeTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	// Modes are raw Unix modes (0o4755 is setuid), set with chmod(2) past the
	// umask.
	chmod := func(p string, mode uint32) {
		t.Helper()
		if err := syscall.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(p string, mode uint32) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
		chmod(p, mode)
	}
	write := func(p, data string, mode uint32) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		chmod(p, mode)
	}
	chown := func(p string, uid, gid int) {
		t.Helper()
		if !isRoot {
			return
		}
		if err := os.Lchown(filepath.Join(root, p), uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(target, p string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}

	write("etc/hostname", "testbase\n", 0o644)
	// b is the file, a a second name for it that sorts first: a is written
	// as the file and b as a hard link to a.
	write("usr/bin/b", "#!/bin/sh\necho tool\n", 0o4755)
	chown("usr/bin/b", 1234, 5678)
	chmod("usr/bin/b", 0o4755) // chown cleared setuid
	if isRoot {                // and chown would clear capabilities
		if err := syscall.Setxattr(filepath.Join(root, "usr/bin/b"), "security.capability", testCapability, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(root, "usr/bin/b"), filepath.Join(root, "usr/bin/a")); err != nil {
		t.Fatal(err)
	}
	symlink("usr/bin", "bin")
	symlink("/bin/bash", "usr/bin/sh") // absolute and dangling outside the image
	mkdir("home/ray", 0o700)
	chown("home/ray", 1000, 1000)
	write("home/ray/.profile", "PS1=ray\n", 0o600)
	chown("home/ray/.profile", 1000, 1000)
	long := "usr/share/" + strings.Repeat("long-directory-name/", 6) + strings.Repeat("x", 120) + ".txt"
	write(long, "long\n", 0o644)

	// Contents left out; the directories stay.
	mkdir("tmp", 0o1777)
	write("tmp/junk", "junk", 0o644)
	write("proc/1/status", "fake", 0o444)
	write("sys/kernel/x", "fake", 0o444)
	mkdir("dev/pts", 0o755)
	write("dev/fake-null", "not a device", 0o666)
	write("run/lock/x.pid", "1", 0o644)
	write("var/cache/apt/archives/bash_5.2_amd64.deb", "deb", 0o644)
	write("var/cache/apt/archives/lock", "", 0o640)
	mkdir("var/cache/apt/archives/partial", 0o700)
	write("var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_InRelease", "lists", 0o644)
	mkdir("var/lib/apt/lists/partial", 0o700)
	// Kept: only the top-level directories are emptied, only .deb files in
	// the archive cache dropped.
	write("usr/tmp/kept", "kept", 0o644)
	write("procfs/kept", "kept", 0o644)
	write("var/cache/apt/archives/partial/x.deb", "kept", 0o644)
	write("var/cache/apt/pkgcache.bin", "kept", 0o644)

	// Special files, skipped wherever they are.
	if err := syscall.Mkfifo(filepath.Join(root, "var/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(root, "var/sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if isRoot {
		if err := syscall.Mknod(filepath.Join(root, "var/null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// testCapability is security.capability for cap_net_raw=ep: struct
// vfs_cap_data revision 2, effective, permitted bit 13, little-endian.
var testCapability = []byte{1, 0, 0, 2, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

// specialFiles is how many device, fifo and socket files makeTree made.
func specialFiles() int {
	if isRoot {
		return 3
	}
	return 2
}

var digestLine = regexp.MustCompile(`(?m)^digest: (sha256:[0-9a-f]{64}) id: (sha256:[0-9a-f]{64}) tag: (\S+) file: (.*)$`)

// build runs the tool and returns its manifest digest and stdout.
func build(t *testing.T, epoch string, args ...string) (v1.Hash, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(args, epoch, &stdout, &stderr); err != nil {
		t.Fatalf("run %q: %v\nstderr: %s", args, err, stderr.String())
	}
	m := digestLine.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no digest line in %q", stdout.String())
	}
	h, err := v1.NewHash(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return h, stdout.String()
}

func writeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ray")
	if err := os.WriteFile(p, []byte("\x7fELF fake ray binary"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func fileSHA(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestReproducible(t *testing.T) {
	root := makeTree(t)
	bin := writeBinary(t)
	out := t.TempDir()
	args := func(root, output string) []string {
		return []string{"--tag", testTag, "--output", output, "--dir", root,
			"--file", bin + "=/usr/local/bin/ray:0755", "--cmd", `["/bin/bash"]`}
	}
	d1, _ := build(t, "", args(root, filepath.Join(out, "1.tar"))...)

	// Touch everything, then move the tree elsewhere: neither is in the image.
	later := time.Now().Add(time.Hour)
	if err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, later, later)
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(bin, later, later); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(root, moved); err != nil {
		t.Fatal(err)
	}
	d2, _ := build(t, "", args(moved, filepath.Join(out, "2.tar"))...)
	if d1 != d2 {
		t.Errorf("same tree gave digests %s and %s", d1, d2)
	}
	if fileSHA(t, filepath.Join(out, "1.tar")) != fileSHA(t, filepath.Join(out, "2.tar")) {
		t.Error("same tree gave different tarballs")
	}

	// What is in the image changes the digest: the time, a file's contents.
	if d3, _ := build(t, "1700000000", args(moved, filepath.Join(out, "3.tar"))...); d3 == d1 {
		t.Error("SOURCE_DATE_EPOCH did not change the digest")
	}
	if err := os.WriteFile(filepath.Join(moved, "etc/hostname"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d4, _ := build(t, "", args(moved, filepath.Join(out, "4.tar"))...); d4 == d1 {
		t.Error("changed file contents did not change the digest")
	}
}

// entry is a tar header with its contents.
type entry struct {
	*tar.Header
	data string
}

func layerEntries(t *testing.T, l v1.Layer) ([]string, map[string]entry) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	entries := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := entries[h.Name]; dup {
			t.Errorf("%s twice in the layer", h.Name)
		}
		names = append(names, h.Name)
		entries[h.Name] = entry{h, string(b)}
	}
	return names, entries
}

func TestImage(t *testing.T) {
	root := makeTree(t)
	bin := writeBinary(t)
	output := filepath.Join(t.TempDir(), "sub", "testbase.tar")
	digest, stdout := build(t, "1700000000", "--tag", testTag, "--output", output,
		"--dir", root, "--file", bin+"=/usr/local/bin/ray:0755", "--file", bin+"=/opt/ray-default-mode",
		"--entrypoint", `["/usr/bin/tini","--"]`, "--cmd", `["/bin/bash","-l"]`,
		"--user", "1000:1000", "--workdir", "/home/ray", "--env", "A=1", "--env", "B=x=y")
	created := time.Unix(1700000000, 0).UTC()

	if !strings.Contains(stdout, "file: "+output) {
		t.Errorf("stdout %q does not name the output", stdout)
	}
	if want := "skipped " + string(rune('0'+specialFiles())) + " device/fifo/socket files, 1 cached .deb files"; !strings.Contains(stdout, want) {
		t.Errorf("stdout %q does not say %q", stdout, want)
	}

	// The docker-archive manifest names the tag, and the image loads by it.
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(output) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{testTag}) {
		t.Fatalf("manifest.json %+v, want one image tagged %s", m, testTag)
	}
	tag := name.MustParseReference(testTag).(name.Tag)
	img, err := tarball.ImageFromPath(output, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := img.Digest(); err != nil || d != digest {
		t.Errorf("image read back has digest %s (%v), the tool said %s", d, err, digest)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || !cfg.Created.Time.Equal(created) {
		t.Errorf("config os/arch/created = %s/%s/%v, want linux/amd64/%v", cfg.OS, cfg.Architecture, cfg.Created, created)
	}
	wantConfig := v1.Config{
		Entrypoint: []string{"/usr/bin/tini", "--"},
		Cmd:        []string{"/bin/bash", "-l"},
		User:       "1000:1000",
		WorkingDir: "/home/ray",
		Env:        []string{defaultPath, "A=1", "B=x=y"},
	}
	if diff := cmp.Diff(wantConfig, cfg.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 || len(cfg.RootFS.DiffIDs) != 2 || len(cfg.History) != 2 {
		t.Fatalf("%d layers, %d diff IDs, %d history entries, want 2 (tree, files)", len(layers), len(cfg.RootFS.DiffIDs), len(cfg.History))
	}

	names, tree := layerEntries(t, layers[0])
	for _, n := range names {
		e := tree[n]
		if !e.ModTime.Equal(created) || e.Uname != "" || e.Gname != "" || !e.AccessTime.IsZero() || !e.ChangeTime.IsZero() {
			t.Errorf("%s: mtime %v uname %q gname %q atime %v ctime %v, want only mtime %v", n, e.ModTime, e.Uname, e.Gname, e.AccessTime, e.ChangeTime, created)
		}
		if strings.HasPrefix(n, "/") || strings.HasPrefix(n, "./") || n == "" {
			t.Errorf("entry name %q, want relative without ./", n)
		}
		if dir := filepath.Dir(strings.TrimSuffix(n, "/")); dir != "." && !slices.Contains(names[:slices.Index(names, n)], dir+"/") {
			t.Errorf("%s comes before its directory %s/", n, dir)
		}
	}
	if !slices.IsSortedFunc(names, func(a, b string) int {
		// WalkDir's order: lexical within a directory, a directory's
		// contents right after it.
		return strings.Compare(strings.ReplaceAll(strings.TrimSuffix(a, "/"), "/", "\x00"), strings.ReplaceAll(strings.TrimSuffix(b, "/"), "/", "\x00"))
	}) {
		t.Errorf("entries not in walk order: %q", names)
	}

	want := []string{
		"bin", "etc/", "etc/hostname", "home/", "home/ray/", "home/ray/.profile",
		"dev/", "proc/", "run/", "sys/", "tmp/",
		"usr/", "usr/bin/", "usr/bin/a", "usr/bin/b", "usr/bin/sh", "usr/tmp/kept", "procfs/kept",
		"var/cache/apt/archives/", "var/cache/apt/archives/lock", "var/cache/apt/archives/partial/",
		"var/cache/apt/archives/partial/x.deb", "var/cache/apt/pkgcache.bin", "var/lib/apt/lists/",
	}
	for _, n := range want {
		if _, ok := tree[n]; !ok {
			t.Errorf("%s missing from the layer", n)
		}
	}
	for _, n := range names {
		for _, skipped := range []string{"tmp/", "proc/", "sys/", "dev/", "run/", "var/lib/apt/lists/"} {
			if strings.HasPrefix(n, skipped) && n != skipped {
				t.Errorf("%s is in the layer, want %s emptied", n, skipped)
			}
		}
		if strings.HasSuffix(n, ".deb") && n != "var/cache/apt/archives/partial/x.deb" {
			t.Errorf("%s is in the layer, want cached .deb files left out", n)
		}
		if n == "var/fifo" || n == "var/sock" || n == "var/null" {
			t.Errorf("special file %s is in the layer", n)
		}
	}

	check := func(n string, typ byte, mode int64, uid, gid int, link, data string) {
		t.Helper()
		e, ok := tree[n]
		if !ok {
			return // reported above
		}
		if e.Typeflag != typ || e.Mode&0o7777 != mode || e.Uid != uid || e.Gid != gid || e.Linkname != link || e.data != data {
			t.Errorf("%s: type %c mode %o uid %d gid %d link %q data %q, want %c %o %d %d %q %q",
				n, e.Typeflag, e.Mode&0o7777, e.Uid, e.Gid, e.Linkname, e.data, typ, mode, uid, gid, link, data)
		}
	}
	toolUID, toolGID, rayID := 0, 0, 0
	if isRoot {
		toolUID, toolGID, rayID = 1234, 5678, 1000
	}
	check("usr/bin/a", tar.TypeReg, 0o4755, toolUID, toolGID, "", "#!/bin/sh\necho tool\n")
	check("usr/bin/b", tar.TypeLink, 0o4755, toolUID, toolGID, "usr/bin/a", "")
	if isRoot {
		if got := tree["usr/bin/a"].PAXRecords[paxCapability]; got != string(testCapability) {
			t.Errorf("usr/bin/a capability %q, want %q", got, testCapability)
		}
		if !strings.Contains(stdout, "1 files with capabilities") {
			t.Errorf("stdout %q does not count the file with capabilities", stdout)
		}
	}
	for _, n := range names {
		if n != "usr/bin/a" && len(tree[n].PAXRecords) > 0 && !strings.HasPrefix(n, "usr/share/long") {
			t.Errorf("%s has PAX records %v", n, tree[n].PAXRecords)
		}
	}
	check("bin", tar.TypeSymlink, 0o777, 0, 0, "usr/bin", "")
	check("usr/bin/sh", tar.TypeSymlink, 0o777, 0, 0, "/bin/bash", "")
	check("tmp/", tar.TypeDir, 0o1777, 0, 0, "", "")
	check("home/ray/", tar.TypeDir, 0o700, rayID, rayID, "", "")
	check("home/ray/.profile", tar.TypeReg, 0o600, rayID, rayID, "", "PS1=ray\n")
	check("etc/hostname", tar.TypeReg, 0o644, 0, 0, "", "testbase\n")
	long := "usr/share/" + strings.Repeat("long-directory-name/", 6) + strings.Repeat("x", 120) + ".txt"
	check(long, tar.TypeReg, 0o644, 0, 0, "", "long\n")

	// The files layer: just the files, owned by root.
	names, files := layerEntries(t, layers[1])
	if !slices.Equal(names, []string{"opt/ray-default-mode", "usr/local/bin/ray"}) {
		t.Errorf("files layer has %q", names)
	}
	tree = files
	check("usr/local/bin/ray", tar.TypeReg, 0o755, 0, 0, "", "\x7fELF fake ray binary")
	check("opt/ray-default-mode", tar.TypeReg, 0o700, 0, 0, "", "\x7fELF fake ray binary")

	// No layer tars left behind next to the output.
	left, err := os.ReadDir(filepath.Dir(output))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name() != "testbase.tar" {
		t.Errorf("output directory holds %v, want only testbase.tar", left)
	}
}

func TestOnlyFiles(t *testing.T) {
	bin := writeBinary(t)
	output := filepath.Join(t.TempDir(), "pause.tar")
	build(t, "", "--tag", "gantry.local/pause:3.10", "--output", output,
		"--file", bin+"=/pause:0755", "--entrypoint", `["/pause"]`, "--user", "65535")
	tag := name.MustParseReference("gantry.local/pause:3.10").(name.Tag)
	img, err := tarball.ImageFromPath(output, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/pause"}) || cfg.Config.Cmd != nil || cfg.Config.User != "65535" ||
		!slices.Equal(cfg.Config.Env, []string{defaultPath}) || !cfg.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("config %+v created %v", cfg.Config, cfg.Created)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	names, _ := layerEntries(t, layers[0])
	if !slices.Equal(names, []string{"pause"}) {
		t.Errorf("layer has %q, want just pause", names)
	}
}

func TestEnvPathOverride(t *testing.T) {
	if got := fullEnv([]string{"A=1", "PATH=/bin"}); !slices.Equal(got, []string{"A=1", "PATH=/bin"}) {
		t.Errorf("fullEnv = %q", got)
	}
}

func TestMergeEnv(t *testing.T) {
	got := mergeEnv([]string{"A=1", "B=2", "C=3"}, []string{"B=x=y", "D=4", "A="})
	if want := []string{"A=", "B=x=y", "C=3", "D=4"}; !slices.Equal(got, want) {
		t.Errorf("mergeEnv = %q, want %q", got, want)
	}
	if got := mergeEnv(nil, nil); len(got) != 0 {
		t.Errorf("mergeEnv(nil, nil) = %q", got)
	}
}

func TestParseFile(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fileSpec
		err  bool
	}{
		{in: "bin/pause=/pause", want: fileSpec{src: "bin/pause", dst: "/pause", mode: -1}},
		{in: "bin/ray=/usr/local/bin/ray:0755", want: fileSpec{src: "bin/ray", dst: "/usr/local/bin/ray", mode: 0o755}},
		{in: "x=/y:4755", want: fileSpec{src: "x", dst: "/y", mode: 0o4755}},
		{in: "bin/pause", err: true},
		{in: "=/pause", err: true},
		{in: "bin/pause=pause", err: true},
		{in: "bin/pause=/usr/bin/", err: true},
		{in: "bin/pause=/usr/../pause", err: true},
		{in: "bin/pause=/pause:0789", err: true},
		{in: "bin/pause=/pause:17777", err: true},
		{in: "bin/pause=/pause:", err: true},
	} {
		got, err := parseFile(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("parseFile(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestRunErrors(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(t.TempDir(), "x.tar")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--output", out, "--dir", root}, "--tag and --output are required"},
		{[]string{"--tag", testTag, "--output", out}, "nothing to put in the image"},
		{[]string{"--tag", "Not A Tag", "--output", out, "--dir", root}, "tag must be"},
		{[]string{"--tag", testTag, "--output", out, "--dir", root, "--cmd", "/bin/bash"}, "JSON array"},
		{[]string{"--tag", testTag, "--output", out, "--dir", root, "--env", "NOEQUALS"}, "want K=V"},
		{[]string{"--tag", testTag, "--output", out, "--file", "a=/x", "--file", "b=/x"}, "given twice"},
		{[]string{"--tag", testTag, "--output", out, "--dir", filepath.Join(root, "missing")}, "no such file"},
		{[]string{"--tag", testTag, "--output", out, "--file", filepath.Join(root, "missing") + "=/x"}, "no such file"},
		{[]string{"--output", out, "--dir", root, "--cmd", `["x"]`}, "--tag and --output are required"},
		{[]string{"--output", out, "--dir", root, "--tag", testTag, "--tag", testTag}, "given twice"},
		{[]string{"--output", out, "--file", "a=/x", "--tag", testTag, "--file", "b=/x"}, "given twice (common and for"},
		{[]string{"--output", out, "--tag", testTag, "--dir", root, "--tag", "gantry.local/other:1"}, "nothing to put in the image gantry.local/other:1"},
		{[]string{"--output", out, "--dir", root, "--tag", testTag, "--entrypoint", "x"}, "JSON array"},
	} {
		err := run(tc.args, "", io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %q: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed build left %s (%v)", out, err)
	}
}

// archiveNames lists the tarball's entries in order.
func archiveNames(t *testing.T, p string) []string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

// TestSeveralImages builds three images on one tree in one tarball: the
// common layers are stored once and come first in each image, the common
// config is each image's default.
func TestSeveralImages(t *testing.T) {
	root := makeTree(t)
	bin := writeBinary(t)
	out := t.TempDir()
	args := func(output string) []string {
		return []string{"--output", output,
			"--dir", root, "--file", bin + "=/usr/local/bin/ray:0755",
			"--entrypoint", `["/usr/bin/tini","--"]`, "--workdir", "/tmp", "--env", "A=1", "--env", "V=common",
			"--tag", "gantry.local/a:1", "--file", bin + "=/usr/local/bin/entrypoint.sh:0755",
			"--entrypoint", `["entrypoint.sh"]`, "--env", "A=2", "--env", "B=1",
			"--tag", "gantry.local/b:1", "--cmd", `["x"]`, "--user", "401",
			"--tag", "gantry.local/c:1", "--file", bin + "=/etc/c", "--entrypoint", ""}
	}
	output := filepath.Join(out, "abc.tar")
	_, stdout := build(t, "", args(output)...)

	lines := digestLine.FindAllStringSubmatch(stdout, -1)
	if len(lines) != 3 {
		t.Fatalf("%d digest lines in %q, want 3", len(lines), stdout)
	}
	tags := []string{"gantry.local/a:1", "gantry.local/b:1", "gantry.local/c:1"}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(output) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 {
		t.Fatalf("manifest.json has %d entries, want 3", len(m))
	}
	type cfg struct {
		entrypoint, cmd, env []string
		user, workdir        string
		layers               int
	}
	want := []cfg{
		{entrypoint: []string{"entrypoint.sh"}, env: []string{defaultPath, "A=2", "V=common", "B=1"}, workdir: "/tmp", layers: 3},
		{entrypoint: []string{"/usr/bin/tini", "--"}, cmd: []string{"x"}, env: []string{defaultPath, "A=1", "V=common"}, user: "401", workdir: "/tmp", layers: 2},
		{env: []string{defaultPath, "A=1", "V=common"}, workdir: "/tmp", layers: 3},
	}
	var common []v1.Hash
	for i, tagStr := range tags {
		if !slices.Equal(m[i].RepoTags, []string{tagStr}) {
			t.Errorf("manifest entry %d is tagged %q, want %s", i, m[i].RepoTags, tagStr)
		}
		if lines[i][3] != tagStr || lines[i][4] != output {
			t.Errorf("digest line %d names %s in %s, want %s in %s", i, lines[i][3], lines[i][4], tagStr, output)
		}
		tag, err := name.NewTag(tagStr)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(output, &tag)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := img.Digest(); err != nil || d.String() != lines[i][1] {
			t.Errorf("%s read back has digest %s (%v), the tool said %s", tagStr, d, err, lines[i][1])
		}
		c, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		got := cfg{entrypoint: c.Config.Entrypoint, cmd: c.Config.Cmd, env: c.Config.Env, user: c.Config.User,
			workdir: c.Config.WorkingDir, layers: len(c.RootFS.DiffIDs)}
		if diff := cmp.Diff(want[i], got, cmp.AllowUnexported(cfg{})); diff != "" {
			t.Errorf("%s config (-want +got):\n%s", tagStr, diff)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		var digests []v1.Hash
		for _, l := range layers {
			d, err := l.Digest()
			if err != nil {
				t.Fatal(err)
			}
			digests = append(digests, d)
		}
		if common == nil {
			common = digests[:2]
		} else if !slices.Equal(digests[:2], common) {
			t.Errorf("%s starts with layers %v, want the common %v", tagStr, digests[:2], common)
		}
		if i != 1 {
			names, _ := layerEntries(t, layers[2])
			wantNames := map[int][]string{0: {"usr/local/bin/entrypoint.sh"}, 2: {"etc/c"}}[i]
			if !slices.Equal(names, wantNames) {
				t.Errorf("%s's own layer has %q, want %q", tagStr, names, wantNames)
			}
		}
	}

	// Each blob once: 3 configs, the tree, the common files and two images'
	// own files, then manifest.json.
	names := archiveNames(t, output)
	if len(names) != 8 || names[len(names)-1] != "manifest.json" {
		t.Errorf("tarball holds %q, want 3 configs, 4 layers and manifest.json last", names)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("%s twice in the tarball", n)
		}
		seen[n] = true
	}

	// The same inputs give the same tarball, byte for byte.
	again := filepath.Join(out, "again.tar")
	build(t, "", args(again)...)
	if fileSHA(t, output) != fileSHA(t, again) {
		t.Error("the same inputs gave different tarballs")
	}
}

// TestSameAsTarballWrite: a single image is laid out exactly as
// go-containerregistry's tarball.Write lays it out.
func TestSameAsTarballWrite(t *testing.T) {
	root := makeTree(t)
	output := filepath.Join(t.TempDir(), "one.tar")
	build(t, "", "--tag", testTag, "--output", output, "--dir", root, "--cmd", `["/bin/bash"]`)
	tag := name.MustParseReference(testTag).(name.Tag)
	img, err := tarball.ImageFromPath(output, &tag)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarball.Write(tag, img, &buf); err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(buf.Bytes()) != fileSHA(t, output) {
		t.Error("the tarball differs from tarball.Write's for the same image")
	}
}

// TestSameImageTwice: two tags of one image share its manifest entry.
func TestSameImageTwice(t *testing.T) {
	bin := writeBinary(t)
	output := filepath.Join(t.TempDir(), "two.tar")
	build(t, "", "--output", output, "--file", bin+"=/pause", "--tag", "gantry.local/x:1", "--tag", "gantry.local/y:1")
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(output) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{"gantry.local/x:1", "gantry.local/y:1"}) {
		t.Errorf("manifest.json %+v, want one entry with both tags", m)
	}
}
