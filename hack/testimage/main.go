// Command testimage builds container images for tests on a real kubelet and
// containerd, without Docker: a docker-archive tarball (the `docker save`
// format) that `ctr -n k8s.io images import FILE.tar` loads. hack/imagebuild
// builds the release image; this is the generic tool for test images
// (hack/test-images.sh).
//
//	testimage --output bin/images/NAME.tar [COMMON FLAGS...] \
//	  --tag gantry.local/NAME:TAG [IMAGE FLAGS...] [--tag ... [IMAGE FLAGS...]]...
//
// where the layer flags are --dir ROOTDIR and --file SRC=/DST[:MODE], and
// the config flags --entrypoint JSON-array, --cmd JSON-array, --user U,
// --workdir W and --env K=V.
//
// Each --tag starts an image, and the flags after it, up to the next
// --tag, are that image's. Flags before the first --tag are common to all
// of the tarball's images: their layers come first in every image (built
// and stored once, so images that share a root cost one copy of it), and
// their config is every image's default, which the image's own config
// replaces (--env adds to the common variables, replacing one of the same
// name). With a single --tag, all flags may simply follow it.
//
// Each --dir is one layer: the whole tree in lexical order with its modes,
// ownership, symlinks and hard links, but without the contents of /dev,
// /proc, /sys, /run, /tmp and /var/lib/apt/lists, without
// /var/cache/apt/archives/*.deb, and without device, fifo and socket files.
// The --file files of one group (the common flags, or one image's) make one
// more layer, after that group's --dir layers, owned by 0:0. Of the
// extended attributes only security.capability (setcap) is kept. The
// images are linux/amd64; every time in them (config, history, file
// mtimes) is --created, default $SOURCE_DATE_EPOCH else 0, so the same
// inputs give the same digests and the same tarball, byte for byte.
//
// It prints each layer's size and then, for each image,
// "digest: <manifest digest> id: <config digest> tag: <tag> file: <path>".
// containerd names an imported image by its tag and its ID by the config
// digest; it writes its own manifest for a docker archive, so the manifest
// digest it shows differs from the one printed here.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// group is what the flags before the first --tag (the common group) or
// between one --tag and the next (an image's) say.
type group struct {
	tag        string
	dirs       []string
	files      []fileSpec
	entrypoint []string
	cmd        []string
	user       string
	workdir    string
	env        []string
	// which of the config flags were given
	entrypointSet, cmdSet, userSet, workdirSet bool
}

// layers are the group's layers: one per --dir, then one of all --file.
func (g *group) layers() []*layerSpec {
	var out []*layerSpec
	for _, d := range g.dirs {
		out = append(out, &layerSpec{dir: d})
	}
	if len(g.files) > 0 {
		out = append(out, &layerSpec{files: g.files})
	}
	return out
}

// mergeEnv is common with own added: a variable own sets replaces
// common's in place, the others follow in order.
func mergeEnv(common, own []string) []string {
	out := append([]string(nil), common...)
	for _, e := range own {
		k, _, _ := strings.Cut(e, "=")
		i := slices.IndexFunc(out, func(o string) bool { return strings.HasPrefix(o, k+"=") })
		if i >= 0 {
			out[i] = e
		} else {
			out = append(out, e)
		}
	}
	return out
}

// images turns the parsed groups into image specs. The common layers are
// the same *layerSpec in every image, so they are built once.
func images(common *group, own []*group) ([]imageSpec, error) {
	commonLayers := common.layers()
	var out []imageSpec
	seen := map[string]bool{}
	for _, g := range own {
		tag, err := name.NewTag(g.tag, name.StrictValidation)
		if err != nil {
			return nil, err
		}
		if seen[tag.String()] {
			return nil, fmt.Errorf("--tag %s given twice", g.tag)
		}
		seen[tag.String()] = true
		for _, f := range g.files {
			if slices.ContainsFunc(common.files, func(c fileSpec) bool { return c.dst == f.dst }) {
				return nil, fmt.Errorf("--file: %s given twice (common and for %s)", f.dst, g.tag)
			}
		}
		im := imageSpec{
			tag:        tag,
			layers:     append(slices.Clone(commonLayers), g.layers()...),
			entrypoint: common.entrypoint,
			cmd:        common.cmd,
			user:       common.user,
			workdir:    common.workdir,
			env:        mergeEnv(common.env, g.env),
		}
		if len(im.layers) == 0 {
			return nil, fmt.Errorf("nothing to put in the image %s: give --dir or --file", g.tag)
		}
		if g.entrypointSet {
			im.entrypoint = g.entrypoint
		}
		if g.cmdSet {
			im.cmd = g.cmd
		}
		if g.userSet {
			im.user = g.user
		}
		if g.workdirSet {
			im.workdir = g.workdir
		}
		out = append(out, im)
	}
	return out, nil
}

func run(args []string, sourceDateEpoch string, stdout, stderr io.Writer) error {
	defaultCreated, err := imagefile.SourceDateEpoch(sourceDateEpoch)
	if err != nil {
		return err
	}

	fs := flag.NewFlagSet("testimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// groups[0] holds the flags before the first --tag; every --tag starts
	// a group. The flag package calls the Func flags in command-line order.
	groups := []*group{{}}
	cur := func() *group { return groups[len(groups)-1] }
	fs.Func("tag", "image `reference` with a tag, e.g. gantry.local/pause:3.10; starts the image's flags (repeatable)", func(v string) error {
		groups = append(groups, &group{tag: v})
		return nil
	})
	output := fs.String("output", "", "docker-archive tarball `path` to write")
	fs.Func("dir", "root `directory` to add as one layer (repeatable, in order)", func(v string) error {
		cur().dirs = append(cur().dirs, v)
		return nil
	})
	fs.Func("file", "`SRC=/DST[:MODE]`: a single file for the group's files layer (repeatable; MODE octal, default the source's)", func(v string) error {
		f, err := parseFile(v)
		if err != nil {
			return err
		}
		g := cur()
		for _, o := range g.files {
			if o.dst == f.dst {
				return fmt.Errorf("--file: %s given twice", f.dst)
			}
		}
		g.files = append(g.files, f)
		return nil
	})
	fs.Func("entrypoint", "entrypoint as a JSON `array`, e.g. '[\"/pause\"]' (default none)", func(v string) error {
		a, err := jsonArray("entrypoint", v)
		cur().entrypoint, cur().entrypointSet = a, true
		return err
	})
	fs.Func("cmd", "command as a JSON `array`, e.g. '[\"/bin/bash\"]' (default none)", func(v string) error {
		a, err := jsonArray("cmd", v)
		cur().cmd, cur().cmdSet = a, true
		return err
	})
	fs.Func("user", "`user` to run as, e.g. 65535 or 1000:1000 (default root)", func(v string) error {
		cur().user, cur().userSet = v, true
		return nil
	})
	fs.Func("workdir", "working `directory` (default /)", func(v string) error {
		cur().workdir, cur().workdirSet = v, true
		return nil
	})
	fs.Func("env", "`K=V` environment variable (repeatable; PATH defaults to the usual one)", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return fmt.Errorf("--env %q: want K=V", v)
		}
		cur().env = append(cur().env, v)
		return nil
	})
	created := fs.Int64("created", defaultCreated, "creation and file modification time, Unix `seconds` (default $SOURCE_DATE_EPOCH, else 0)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(groups) < 2 || *output == "" {
		return errors.New("--tag and --output are required")
	}
	var s spec
	if s.images, err = images(groups[0], groups[1:]); err != nil {
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

	imgs, layers, err := buildImages(s, tmp)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := writeTarball(*output, imgs); err != nil {
		return fmt.Errorf("%s: %w", *output, err)
	}
	took := time.Since(start)
	if err := report(stdout, layers); err != nil {
		return err
	}
	fi, err := os.Stat(*output)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tarball %s: %s, %d image(s) sharing %d layer(s), compressed and written in %.1fs\n",
		*output, human(fi.Size()), len(imgs), len(layers), took.Seconds())
	for _, bi := range imgs {
		digest, err := bi.img.Digest()
		if err != nil {
			return err
		}
		id, err := bi.img.ConfigName()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "image %s: layers %s\n", bi.tag, strings.Join(bi.layers, ", "))
		fmt.Fprintf(stdout, "digest: %s id: %s tag: %s file: %s\n", digest, id, bi.tag, *output)
	}
	return nil
}
