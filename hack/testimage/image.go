package main

import (
	"compress/gzip"
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

// spec is everything that goes into a test image.
type spec struct {
	tag        name.Tag
	dirs       []string   // root directories, one layer each, in order
	files      []fileSpec // single files, together in one layer after the dirs
	entrypoint []string
	cmd        []string
	user       string
	workdir    string
	env        []string
	created    time.Time // config Created, history and every tar entry's mtime
}

// builtLayer describes one layer for the report.
type builtLayer struct {
	what  string // "--dir DIR" or "--file ..."
	layer v1.Layer
	tree  *treeStats // for --dir layers
	// how long writing the layer tar and computing its digests (a gzip
	// pass) took
	tarTook, hashTook time.Duration
}

// env returns s.env with the default PATH first unless it sets PATH.
func (s spec) fullEnv() []string {
	for _, e := range s.env {
		if strings.HasPrefix(e, "PATH=") {
			return s.env
		}
	}
	return append([]string{defaultPath}, s.env...)
}

// layerFromTar makes a gzip layer of an uncompressed tar file. The gzip runs
// at BestSpeed (a gigabyte root takes seconds) and, like the tar, is the same
// for the same bytes.
func layerFromTar(path string) (v1.Layer, error) {
	return tarball.LayerFromFile(path, tarball.WithCompressionLevel(gzip.BestSpeed))
}

// buildImage writes the layer tars into tmp (they stay there until the image
// has been written) and returns the linux/amd64 image.
func buildImage(s spec, tmp string) (v1.Image, []builtLayer, error) {
	var layers []builtLayer
	var adds []mutate.Addendum
	created := v1.Time{Time: s.created.UTC()}
	for _, dir := range s.dirs {
		start := time.Now()
		p, stats, err := writeTreeFile(tmp, dir, s.created)
		if err != nil {
			return nil, nil, fmt.Errorf("--dir %s: %w", dir, err)
		}
		tarTook := time.Since(start)
		l, err := layerFromTar(p)
		if err != nil {
			return nil, nil, err
		}
		layers = append(layers, builtLayer{what: "--dir " + dir, layer: l, tree: &stats,
			tarTook: tarTook, hashTook: time.Since(start) - tarTook})
		// Only what is in the tree goes into the image, not where it lay.
		adds = append(adds, mutate.Addendum{Layer: l, History: v1.History{
			Created: created, CreatedBy: fmt.Sprintf("testimage: directory tree (%d entries)", stats.entries)}})
	}
	if len(s.files) > 0 {
		p, err := writeFilesFile(tmp, s.files, s.created)
		if err != nil {
			return nil, nil, err
		}
		l, err := layerFromTar(p)
		if err != nil {
			return nil, nil, err
		}
		var dsts []string
		for _, f := range s.files {
			dsts = append(dsts, f.dst)
		}
		layers = append(layers, builtLayer{what: "--file " + strings.Join(dsts, " "), layer: l})
		adds = append(adds, mutate.Addendum{Layer: l, History: v1.History{
			Created: created, CreatedBy: "testimage: files " + strings.Join(dsts, " ")}})
	}
	if len(adds) == 0 {
		return nil, nil, fmt.Errorf("no layers: give --dir or --file")
	}

	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      created,
		Config: v1.Config{
			Entrypoint: s.entrypoint,
			Cmd:        s.cmd,
			User:       s.user,
			WorkingDir: s.workdir,
			Env:        s.fullEnv(),
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, nil, err
	}
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, nil, err
	}
	return img, layers, nil
}

// writeTarball writes img tagged tag as a docker-archive tarball (the
// `docker save` format, which `ctr images import` and `docker load` read) to
// path, atomically: a failed build leaves no truncated tarball.
func writeTarball(path string, tag name.Tag, img v1.Image) error {
	return imagefile.WriteAtomic(path, func(w io.Writer) error { return tarball.Write(tag, img, w) })
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
