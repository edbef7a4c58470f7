package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gantry-dev/gantry/hack/internal/imagefile"
)

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// layerSpec is one layer: a directory tree or a set of single files.
type layerSpec struct {
	dir   string     // a root directory, or
	files []fileSpec // single files
}

// what names the layer in the report and the image history.
func (l *layerSpec) what() string {
	if l.dir != "" {
		return "--dir " + l.dir
	}
	var dsts []string
	for _, f := range l.files {
		dsts = append(dsts, f.dst)
	}
	return "--file " + strings.Join(dsts, " ")
}

// imageSpec is one image: its layers, in order, and its config.
type imageSpec struct {
	tag        name.Tag
	layers     []*layerSpec
	entrypoint []string
	cmd        []string
	user       string
	workdir    string
	env        []string
}

// spec is everything that goes into a tarball of test images.
type spec struct {
	images  []imageSpec
	created time.Time // config Created, history and every tar entry's mtime
}

// builtLayer describes one layer for the report.
type builtLayer struct {
	what    string // "--dir DIR" or "--file ..."
	layer   v1.Layer
	history v1.History
	tree    *treeStats // for --dir layers
	// how long writing the layer tar and computing its digests (a gzip
	// pass) took
	tarTook, hashTook time.Duration
}

// builtImage is an image and its tag; layers are its layers' numbers in
// the report.
type builtImage struct {
	tag    name.Tag
	img    v1.Image
	layers []string
}

// fullEnv returns env with the default PATH first unless it sets PATH.
func fullEnv(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			return env
		}
	}
	return append([]string{defaultPath}, env...)
}

// layerFromTar makes a gzip layer of an uncompressed tar file. The gzip runs
// at BestSpeed (a gigabyte root takes seconds) and, like the tar, is the same
// for the same bytes.
func layerFromTar(path string) (v1.Layer, error) {
	return tarball.LayerFromFile(path, tarball.WithCompressionLevel(gzip.BestSpeed))
}

// buildLayer writes ls's layer tar into tmp (it stays there until the
// images have been written) and returns the layer.
func buildLayer(ls *layerSpec, tmp string, mtime time.Time) (builtLayer, error) {
	created := v1.Time{Time: mtime.UTC()}
	if ls.dir != "" {
		start := time.Now()
		p, stats, err := writeTreeFile(tmp, ls.dir, mtime)
		if err != nil {
			return builtLayer{}, fmt.Errorf("--dir %s: %w", ls.dir, err)
		}
		tarTook := time.Since(start)
		l, err := layerFromTar(p)
		if err != nil {
			return builtLayer{}, err
		}
		if _, err := l.Digest(); err != nil { // the gzip pass, timed here
			return builtLayer{}, err
		}
		// Only what is in the tree goes into the image, not where it lay.
		return builtLayer{what: ls.what(), layer: l, tree: &stats, tarTook: tarTook, hashTook: time.Since(start) - tarTook,
			history: v1.History{Created: created, CreatedBy: fmt.Sprintf("testimage: directory tree (%d entries)", stats.entries)}}, nil
	}
	p, err := writeFilesFile(tmp, ls.files, mtime)
	if err != nil {
		return builtLayer{}, err
	}
	l, err := layerFromTar(p)
	if err != nil {
		return builtLayer{}, err
	}
	return builtLayer{what: ls.what(), layer: l,
		history: v1.History{Created: created, CreatedBy: "testimage: files " + strings.TrimPrefix(ls.what(), "--file ")}}, nil
}

// buildImages builds every layer once, in order of first use, and the
// linux/amd64 images on them.
func buildImages(s spec, tmp string) ([]builtImage, []builtLayer, error) {
	var layers []builtLayer
	number := map[*layerSpec]int{} // index in layers
	var out []builtImage
	created := v1.Time{Time: s.created.UTC()}
	for _, is := range s.images {
		var adds []mutate.Addendum
		var numbers []string
		for _, ls := range is.layers {
			i, ok := number[ls]
			if !ok {
				bl, err := buildLayer(ls, tmp, s.created)
				if err != nil {
					return nil, nil, err
				}
				i = len(layers)
				number[ls] = i
				layers = append(layers, bl)
			}
			adds = append(adds, mutate.Addendum{Layer: layers[i].layer, History: layers[i].history})
			numbers = append(numbers, fmt.Sprint(i+1))
		}
		if len(adds) == 0 {
			return nil, nil, fmt.Errorf("no layers in %s: give --dir or --file", is.tag)
		}
		img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
			Architecture: "amd64",
			OS:           "linux",
			Created:      created,
			Config: v1.Config{
				Entrypoint: is.entrypoint,
				Cmd:        is.cmd,
				User:       is.user,
				WorkingDir: is.workdir,
				Env:        fullEnv(is.env),
			},
			RootFS: v1.RootFS{Type: "layers"},
		})
		if err != nil {
			return nil, nil, err
		}
		if img, err = mutate.Append(img, adds...); err != nil {
			return nil, nil, err
		}
		out = append(out, builtImage{tag: is.tag, img: img, layers: numbers})
	}
	return out, layers, nil
}

// writeTarball writes images as one docker-archive tarball (the `docker
// save` format, which `ctr images import` and `docker load` read) to path,
// atomically: a failed build leaves no truncated tarball.
func writeTarball(path string, images []builtImage) error {
	return imagefile.WriteAtomic(path, func(w io.Writer) error { return writeArchive(w, images) })
}

// writeArchive writes images as a docker archive, laid out as
// go-containerregistry's tarball.Write lays out one image (a single image
// gives the same bytes), but in a fixed order: each image's config, then
// those of its layers no earlier image wrote, and last manifest.json with
// one entry per image, in the order given. (tarball.MultiWrite walks a
// map, so the order of its entries, and the tarball's bytes, would change
// from run to run.) Tags whose images are the same share an entry.
func writeArchive(w io.Writer, images []builtImage) error {
	tw := tar.NewWriter(w)
	var m tarball.Manifest
	entry := map[v1.Hash]int{} // config digest: index in m
	written := map[v1.Hash]bool{}
	for _, bi := range images {
		cfgName, err := bi.img.ConfigName()
		if err != nil {
			return err
		}
		if i, ok := entry[cfgName]; ok {
			m[i].RepoTags = append(m[i].RepoTags, repoTag(bi.tag))
			continue
		}
		cfg, err := bi.img.RawConfigFile()
		if err != nil {
			return err
		}
		if err := writeArchiveEntry(tw, cfgName.String(), bytes.NewReader(cfg), int64(len(cfg))); err != nil {
			return err
		}
		layers, err := bi.img.Layers()
		if err != nil {
			return err
		}
		d := tarball.Descriptor{Config: cfgName.String(), RepoTags: []string{repoTag(bi.tag)}}
		for _, l := range layers {
			digest, err := l.Digest()
			if err != nil {
				return err
			}
			file := digest.Hex + ".tar.gz" // every layer here is gzip
			d.Layers = append(d.Layers, file)
			if written[digest] {
				continue
			}
			written[digest] = true
			if err := writeArchiveLayer(tw, file, l); err != nil {
				return err
			}
		}
		entry[cfgName] = len(m)
		m = append(m, d)
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := writeArchiveEntry(tw, "manifest.json", bytes.NewReader(mb), int64(len(mb))); err != nil {
		return err
	}
	return tw.Close()
}

// repoTag is how docker archives spell a tag (go-containerregistry's
// spelling): with the registry and repository as given, and ":latest"
// spelled out.
func repoTag(tag name.Tag) string {
	ts := tag.String()
	if tag.Identifier() == name.DefaultTag && !strings.HasSuffix(ts, ":"+name.DefaultTag) {
		ts += ":" + name.DefaultTag
	}
	return ts
}

// writeArchiveEntry writes one regular file with go-containerregistry's
// header: mode 0644 and nothing else.
func writeArchiveEntry(tw *tar.Writer, name string, r io.Reader, size int64) error {
	if err := tw.WriteHeader(&tar.Header{Mode: 0o644, Typeflag: tar.TypeReg, Size: size, Name: name}); err != nil {
		return err
	}
	n, err := io.Copy(tw, r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: wrote %d of %d bytes", name, n, size)
	}
	return err
}

func writeArchiveLayer(tw *tar.Writer, name string, l v1.Layer) error {
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	return writeArchiveEntry(tw, name, rc, size)
}

// report prints each layer's size and what went into it.
func report(w io.Writer, layers []builtLayer) error {
	for i, bl := range layers {
		d, err := bl.layer.Digest()
		if err != nil {
			return err
		}
		size, err := bl.layer.Size()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "layer %d: %s (%s) %s compressed\n", i+1, bl.what, d, human(size))
		if t := bl.tree; t != nil {
			fmt.Fprintf(w, "  tar %.1fs, digests %.1fs; %d entries: %d files (%s), %d hard links, %d symlinks, %d files with capabilities; %d directories emptied (/dev, /proc, /run, /sys, /tmp, apt lists); skipped %d device/fifo/socket files, %d cached .deb files\n",
				bl.tarTook.Seconds(), bl.hashTook.Seconds(), t.entries, t.regular, human(t.bytes), t.hardlinks, t.symlinks, t.capabilities, t.emptied, t.special, t.debs)
		}
	}
	return nil
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
