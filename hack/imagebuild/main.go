// Command imagebuild writes the Gantry manager container image as a tarball
// without Docker, from Go modules only (`make image`). The image is the one
// the Dockerfile builds on distroless/static:nonroot: /manager as entrypoint,
// user 65532:65532, passwd/group, the Mozilla CA roots and /tmp. The output is
// byte-for-byte reproducible: fixed timestamps, ownership and entry order.
//
//	imagebuild --tag ghcr.io/gantry-dev/gantry:0.1.0 --output bin/image/gantry-0.1.0.tar \
//	  --binary linux/amd64=bin/image/manager-linux-amd64
//
// The tarball loads with `docker load` and `kind load image-archive`. With
// several --binary flags it writes one tarball per platform (docker load
// cannot load a multi-platform index). For each image it prints
// "digest: <manifest digest> id: <config digest> platform: <p> file: <path>".
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gantry-dev/gantry/hack/internal/imagefile"
)

func main() {
	if err := run(os.Args[1:], os.Getenv("SOURCE_DATE_EPOCH"), os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

// binaryFlag is one --binary value: [os/arch[/variant]=]path.
type binaryFlag struct {
	platform v1.Platform
	path     string
}

func parseBinary(s string) (binaryFlag, error) {
	p, path, ok := strings.Cut(s, "=")
	if !ok {
		p, path = "linux/amd64", s
	}
	plat, err := v1.ParsePlatform(p)
	if err != nil {
		return binaryFlag{}, err
	}
	if plat.OS == "" || plat.Architecture == "" || plat.OSVersion != "" || path == "" {
		return binaryFlag{}, fmt.Errorf("--binary %q: want os/arch[/variant]=path", s)
	}
	return binaryFlag{platform: *plat, path: path}, nil
}

// outputPath is where the image for p goes: out itself for a single
// platform, else out with "-os-arch[-variant]" before its extension.
func outputPath(out string, p v1.Platform, several bool) string {
	if !several {
		return out
	}
	ext := filepath.Ext(out)
	suffix := "-" + p.OS + "-" + p.Architecture
	if p.Variant != "" {
		suffix += "-" + p.Variant
	}
	return strings.TrimSuffix(out, ext) + suffix + ext
}

func run(args []string, sourceDateEpoch string, stdout, stderr io.Writer) error {
	defaultCreated, err := imagefile.SourceDateEpoch(sourceDateEpoch)
	if err != nil {
		return err
	}

	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var binaries []binaryFlag
	fs.Func("binary", "`[os/arch[/variant]=]path` of the manager binary for a platform (repeatable; default platform linux/amd64)", func(s string) error {
		b, err := parseBinary(s)
		if err != nil {
			return err
		}
		binaries = append(binaries, b)
		return nil
	})
	tagFlag := fs.String("tag", "", "image `reference` with a tag, e.g. ghcr.io/gantry-dev/gantry:0.1.0")
	output := fs.String("output", "", "tarball `path`; with several platforms one per platform, -os-arch[-variant] added before the extension")
	created := fs.Int64("created", defaultCreated, "image creation and file modification time, Unix `seconds` (default $SOURCE_DATE_EPOCH, else 0)")
	version := fs.String("version", "", "org.opencontainers.image.version label (default: the tag)")
	source := fs.String("source", "https://github.com/gantry-dev/gantry", "org.opencontainers.image.source label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(binaries) == 0 || *tagFlag == "" || *output == "" {
		return errors.New("--binary, --tag and --output are required")
	}
	tag, err := name.NewTag(*tagFlag, name.StrictValidation)
	if err != nil {
		return err
	}
	slices.SortFunc(binaries, func(a, b binaryFlag) int { return strings.Compare(a.platform.String(), b.platform.String()) })
	for i := 1; i < len(binaries); i++ {
		if binaries[i].platform.String() == binaries[i-1].platform.String() {
			return fmt.Errorf("--binary: platform %s given twice", binaries[i].platform)
		}
	}
	if *version == "" {
		*version = tag.TagStr()
	}
	mtime := time.Unix(*created, 0).UTC()
	labels := map[string]string{
		"org.opencontainers.image.source":   *source,
		"org.opencontainers.image.title":    "gantry",
		"org.opencontainers.image.version":  *version,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}

	for _, b := range binaries {
		img, err := buildImage(imageSpec{platform: b.platform, binary: b.path, created: mtime, labels: labels})
		if err != nil {
			return fmt.Errorf("%s: %w", b.platform, err)
		}
		out := outputPath(*output, b.platform, len(binaries) > 1)
		if err := writeArchiveFile(out, img, tag, b.platform, mtime); err != nil {
			return fmt.Errorf("%s: %w", out, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		id, err := img.ConfigName()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "digest: %s id: %s platform: %s file: %s\n", digest, id, b.platform, out)
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		for _, l := range layers {
			d, _ := l.Digest()
			size, _ := l.Size()
			fmt.Fprintf(stderr, "  layer %s %d bytes compressed\n", d, size)
		}
	}
	return nil
}
