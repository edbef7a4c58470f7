package main

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// emptiedDirs are the top-level directories of a root whose contents never go
// into a layer: the runtime mounts or fills them. The directories themselves
// are kept (empty), so the mount points exist.
var emptiedDirs = []string{"dev", "proc", "run", "sys", "tmp"}

// emptiedCaches are directories whose contents are package manager caches,
// left out like emptiedDirs.
var emptiedCaches = []string{"var/lib/apt/lists"}

// debCache is where apt and debootstrap keep downloaded packages; its *.deb
// files are left out (the directory and its partial/ stay).
const debCache = "var/cache/apt/archives"

// treeStats says what went into a directory layer and what did not.
type treeStats struct {
	entries   int   // tar entries written
	regular   int   // regular files with contents
	hardlinks int   // tar hard links (later paths of a multiply linked file)
	symlinks  int   // symbolic links
	bytes     int64 // bytes of file contents written
	special   int   // device, fifo and socket files skipped
	debs      int   // *.deb files skipped from the apt archive cache
	emptied   int   // directories written without their contents
	// regular files with a security.capability extended attribute
	capabilities int
}

// paxCapability is how tar (GNU, Go, containerd, Docker) records a file's
// security.capability extended attribute.
const paxCapability = "SCHILY.xattr.security.capability"

// fileCapability returns p's security.capability attribute, "" if it has
// none.
func fileCapability(p string) (string, error) {
	buf := make([]byte, 64) // vfs_cap_data is 20 or 24 bytes
	n, err := syscall.Getxattr(p, "security.capability", buf)
	switch {
	case err == syscall.ENODATA || err == syscall.ENOTSUP:
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading security.capability: %w", err)
	}
	return string(buf[:n]), nil
}

// treeWriter writes a directory tree as one layer tar: entries in
// lexical order (filepath.WalkDir's), every mtime set to mtime, ownership
// and permission bits (including setuid, setgid, sticky) as on disk, no
// user or group names, access or change times, so the same tree always gives
// the same bytes wherever it lies and whenever its files were touched.
type treeWriter struct {
	root  string
	mtime time.Time
	tw    *tar.Writer
	// links maps a multiply linked regular file to the first name written
	// for it, so later names become tar hard links to it.
	links map[fileID]string
	stats treeStats
}

type fileID struct{ dev, ino uint64 }

// writeTreeTar writes root as a layer tar to w.
func writeTreeTar(w io.Writer, root string, mtime time.Time) (treeStats, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return treeStats{}, err
	}
	if !fi.IsDir() {
		return treeStats{}, fmt.Errorf("%s is not a directory", root)
	}
	t := &treeWriter{root: root, mtime: mtime, tw: tar.NewWriter(w), links: map[fileID]string{}}
	if err := filepath.WalkDir(root, t.visit); err != nil {
		return t.stats, err
	}
	return t.stats, t.tw.Close()
}

// writeTreeFile writes root as a layer tar to a new file in dir (a layer of
// a whole root file system can be a gigabyte: it is streamed, never held in
// memory) and returns the file's path.
func writeTreeFile(dir, root string, mtime time.Time) (string, treeStats, error) {
	f, err := os.CreateTemp(dir, "layer-*.tar")
	if err != nil {
		return "", treeStats{}, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	stats, err := writeTreeTar(bw, root, mtime)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", stats, err
	}
	return f.Name(), stats, nil
}

func (t *treeWriter) visit(p string, d fs.DirEntry, err error) error {
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(t.root, p)
	if err != nil {
		return err
	}
	rel = filepath.ToSlash(rel)
	if rel == "." {
		return nil // the root itself is the image's /, which the runtime makes
	}
	typ := d.Type()
	if typ&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0 {
		t.stats.special++
		return nil
	}
	if typ.IsRegular() && path.Dir(rel) == debCache && strings.HasSuffix(rel, ".deb") {
		t.stats.debs++
		return nil
	}
	if err := t.write(p, rel, d); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if d.IsDir() && (slices.Contains(emptiedDirs, rel) || slices.Contains(emptiedCaches, rel)) {
		t.stats.emptied++
		return fs.SkipDir
	}
	return nil
}

// write writes one entry (and a regular file's contents).
func (t *treeWriter) write(p, rel string, d fs.DirEntry) error {
	fi, err := d.Info()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no stat data (not a Unix file system?)")
	}
	var link string
	if fi.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	}
	h, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	h.Name = rel
	if fi.IsDir() {
		h.Name += "/"
	}
	h.Uid, h.Gid = int(st.Uid), int(st.Gid)
	// Names come from the host's user database, not the tree's: leave them
	// out (runtimes use the numbers).
	h.Uname, h.Gname = "", ""
	h.ModTime, h.AccessTime, h.ChangeTime = t.mtime, time.Time{}, time.Time{}
	h.Devmajor, h.Devminor = 0, 0
	// Unspecified format: the writer uses USTAR where it can and PAX (or GNU)
	// where a name, link target, size or id needs it.
	h.Format = tar.FormatUnknown

	if fi.Mode().IsRegular() && st.Nlink > 1 {
		id := fileID{dev: uint64(st.Dev), ino: st.Ino}
		if first, ok := t.links[id]; ok {
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
			if err := t.tw.WriteHeader(h); err != nil {
				return err
			}
			t.stats.entries++
			t.stats.hardlinks++
			return nil
		}
		t.links[id] = rel
	}
	if fi.Mode().IsRegular() {
		// File capabilities (setcap) are part of what a binary may do; other
		// extended attributes (SELinux labels and the like) are the host's.
		c, err := fileCapability(p)
		if err != nil {
			return err
		}
		if c != "" {
			h.PAXRecords = map[string]string{paxCapability: c}
			t.stats.capabilities++
		}
	}
	if err := t.tw.WriteHeader(h); err != nil {
		return err
	}
	t.stats.entries++
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t.stats.symlinks++
	case fi.Mode().IsRegular():
		t.stats.regular++
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.CopyN(t.tw, f, h.Size)
		t.stats.bytes += n
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("file shrank while being read (%d of %d bytes)", n, h.Size)
			}
			return err
		}
	}
	return nil
}

// fileSpec is one --file: a single regular file put at an absolute path.
type fileSpec struct {
	src  string
	dst  string // absolute path in the image
	mode int64  // -1: the source's permission bits
}

// writeFilesTar writes files as a layer tar: regular files named by their
// destination, in name order, owned by 0:0, with mtime. No parent
// directories are written, so the lower layers' directories keep their
// ownership and modes (runtimes create missing parents).
func writeFilesTar(w io.Writer, files []fileSpec, mtime time.Time) error {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b fileSpec) int { return strings.Compare(a.dst, b.dst) })
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := writeFile(tw, f, mtime); err != nil {
			return fmt.Errorf("--file %s=%s: %w", f.src, f.dst, err)
		}
	}
	return tw.Close()
}

func writeFile(tw *tar.Writer, f fileSpec, mtime time.Time) error {
	r, err := os.Open(f.src)
	if err != nil {
		return err
	}
	defer r.Close()
	fi, err := r.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	mode := f.mode
	if mode < 0 {
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		mode = h.Mode
	}
	h := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.TrimPrefix(f.dst, "/"),
		Mode:     mode,
		Size:     fi.Size(),
		ModTime:  mtime,
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.CopyN(tw, r, h.Size)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("file shrank while being read (%d of %d bytes)", n, h.Size)
	}
	return err
}

// writeFilesFile writes the files' layer tar to a new file in dir.
func writeFilesFile(dir string, files []fileSpec, mtime time.Time) (string, error) {
	f, err := os.CreateTemp(dir, "files-*.tar")
	if err != nil {
		return "", err
	}
	bw := bufio.NewWriter(f)
	err = writeFilesTar(bw, files, mtime)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
