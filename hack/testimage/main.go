// Command testimage builds container images for tests on a real kubelet and
// containerd, without Docker: a docker-archive tarball (the `docker save`
// format) that `ctr -n k8s.io images import FILE.tar` loads. hack/imagebuild
// builds the release image; this is the generic tool for test images
// (hack/test-images.sh).
//
//	testimage --tag gantry.local/NAME:TAG --output bin/images/NAME.tar \
//	  [--dir ROOTDIR]... [--file SRC=/DST[:MODE]]... \
//	  [--entrypoint JSON-array] [--cmd JSON-array] [--user U] [--workdir W] [--env K=V]...
//
// Each --dir is one layer: the whole tree in lexical order with its modes,
// ownership, symlinks and hard links, but without the contents of /dev,
// /proc, /sys, /run, /tmp and /var/lib/apt/lists, without
// /var/cache/apt/archives/*.deb, and without device, fifo and socket files.
// The --file files (e.g. static binaries) make one more layer, owned by
// 0:0. Of the extended attributes only security.capability (setcap) is
// kept. The image is linux/amd64; every
// time in it (config, history, file mtimes) is --created, default
// $SOURCE_DATE_EPOCH else 0, so the same inputs give the same digest.
//
// It prints each layer's size and then
// "digest: <manifest digest> id: <config digest> file: <path>". containerd
// names the imported image by the tag and its ID by the config digest; it
// writes its own manifest for a docker archive, so the manifest digest it
// shows differs from the one printed here.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gantry-dev/gantry/hack/internal/imagefile"
)

func main() {
	if err := run(os.Args[1:], os.Getenv("SOURCE_DATE_EPOCH"), os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "testimage:", err)
		os.Exit(1)
	}
}

// parseFile parses a --file value, SRC=/DST[:MODE] with MODE in octal.
func parseFile(s string) (fileSpec, error) {
	src, dst, ok := strings.Cut(s, "=")
	if !ok || src == "" || dst == "" {
		return fileSpec{}, fmt.Errorf("--file %q: want SRC=/DST[:MODE]", s)
	}
	f := fileSpec{src: src, dst: dst, mode: -1}
	if i := strings.LastIndex(dst, ":"); i >= 0 {
		m, err := strconv.ParseUint(dst[i+1:], 8, 32)
		if err != nil || m > 0o7777 {
			return fileSpec{}, fmt.Errorf("--file %q: mode %q is not an octal file mode", s, dst[i+1:])
		}
		f.dst, f.mode = dst[:i], int64(m)
	}
	if !strings.HasPrefix(f.dst, "/") || strings.HasSuffix(f.dst, "/") || filepath.Clean(f.dst) != f.dst {
		return fileSpec{}, fmt.Errorf("--file %q: destination must be a clean absolute file path", s)
	}
	return f, nil
}

// jsonArray parses a JSON array of strings; "" means unset.
func jsonArray(flagName, s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var a []string
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return nil, fmt.Errorf("--%s %q: want a JSON array of strings: %w", flagName, s, err)
	}
	return a, nil
}

func run(args []string, sourceDateEpoch string, stdout, stderr io.Writer) error {
	defaultCreated, err := imagefile.SourceDateEpoch(sourceDateEpoch)
	if err != nil {
		return err
	}

	fs := flag.NewFlagSet("testimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s spec
	tagFlag := fs.String("tag", "", "image `reference` with a tag, e.g. gantry.local/pause:3.10")
	output := fs.String("output", "", "docker-archive tarball `path` to write")
	fs.Func("dir", "root `directory` to add as one layer (repeatable, in order)", func(v string) error {
		s.dirs = append(s.dirs, v)
		return nil
	})
	fs.Func("file", "`SRC=/DST[:MODE]`: a single file for the last layer (repeatable; MODE octal, default the source's)", func(v string) error {
		f, err := parseFile(v)
		if err != nil {
			return err
		}
		for _, o := range s.files {
			if o.dst == f.dst {
				return fmt.Errorf("--file: %s given twice", f.dst)
			}
		}
		s.files = append(s.files, f)
		return nil
	})
	entrypoint := fs.String("entrypoint", "", "entrypoint as a JSON `array`, e.g. '[\"/pause\"]' (default none)")
	cmd := fs.String("cmd", "", "command as a JSON `array`, e.g. '[\"/bin/bash\"]' (default none)")
	fs.StringVar(&s.user, "user", "", "`user` to run as, e.g. 65535 or 1000:1000 (default root)")
	fs.StringVar(&s.workdir, "workdir", "", "working `directory` (default /)")
	fs.Func("env", "`K=V` environment variable (repeatable; PATH defaults to the usual one)", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return fmt.Errorf("--env %q: want K=V", v)
		}
		s.env = append(s.env, v)
		return nil
	})
	created := fs.Int64("created", defaultCreated, "creation and file modification time, Unix `seconds` (default $SOURCE_DATE_EPOCH, else 0)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *tagFlag == "" || *output == "" {
		return errors.New("--tag and --output are required")
	}
	if len(s.dirs) == 0 && len(s.files) == 0 {
		return errors.New("nothing to put in the image: give --dir or --file")
	}
	if s.tag, err = name.NewTag(*tagFlag, name.StrictValidation); err != nil {
		return err
	}
	if s.entrypoint, err = jsonArray("entrypoint", *entrypoint); err != nil {
		return err
	}
	if s.cmd, err = jsonArray("cmd", *cmd); err != nil {
		return err
	}
	s.created = time.Unix(*created, 0).UTC()

	// Layer tars go next to the output (same file system, and not a small
	// tmpfs /tmp) and are removed at the end.
	if err := os.MkdirAll(filepath.Dir(*output), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(*output), ".testimage-layers-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	img, layers, err := buildImage(s, tmp)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := writeTarball(*output, s.tag, img); err != nil {
		return fmt.Errorf("%s: %w", *output, err)
	}
	took := time.Since(start)
	if err := report(stdout, layers); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	fi, err := os.Stat(*output)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "image %s: %s, compressed and written in %.1fs\n", s.tag, human(fi.Size()), took.Seconds())
	fmt.Fprintf(stdout, "digest: %s id: %s file: %s\n", digest, id, *output)
	return nil
}
