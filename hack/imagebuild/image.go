package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

const (
	nonroot    = 65532
	caBundle   = "etc/ssl/certs/ca-certificates.crt"
	entrypoint = "/manager"
)

// imageSpec is everything that goes into one platform's image.
type imageSpec struct {
	platform v1.Platform
	binary   string    // path of the manager binary for platform
	created  time.Time // config Created, history and every tar entry's mtime
	labels   map[string]string
}

// file is one entry of a layer tar. Names have no leading slash; directories
// end in "/".
type file struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
}

// The same users and groups as distroless's nonroot images.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

// baseFiles is what distroless/static provides that the manager needs: users,
// CA roots, a writable /tmp (webhook serving certs) and nonroot's home.
func baseFiles() []file {
	return []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: caBundle, mode: 0o644, data: caPEM()},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonroot, gid: nonroot},
		{name: "tmp/", mode: 0o1777},
	}
}

// caPEM returns the Mozilla (NSS) roots shipped in the Go module
// golang.org/x/crypto/x509roots/fallback as a PEM bundle. Roots carrying a
// constraint (an NSS "distrust after" date) are left out: a PEM file cannot
// express the constraint, and trusting them without it would be wider than
// Mozilla's trust.
func caPEM() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}

// layerTar writes files as a tar stream in name order with fixed metadata, so
// the same files always give the same bytes.
func layerTar(files []file, mtime time.Time) ([]byte, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			Uname:   userName(f.uid),
			Gname:   userName(f.gid),
			ModTime: mtime,
			Format:  tar.FormatUSTAR,
		}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar header %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func userName(id int) string {
	switch id {
	case 0:
		return "root"
	case nonroot:
		return "nonroot"
	}
	return ""
}

func newLayer(files []file, mtime time.Time) (v1.Layer, error) {
	raw, err := layerTar(files, mtime)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// buildImage makes the manager image for one platform on an empty base: a
// base-files layer (the same for every platform and release) and the /manager
// layer.
func buildImage(s imageSpec) (v1.Image, error) {
	bin, err := os.ReadFile(s.binary)
	if err != nil {
		return nil, err
	}
	base, err := newLayer(baseFiles(), s.created)
	if err != nil {
		return nil, err
	}
	manager, err := newLayer([]file{{name: strings.TrimPrefix(entrypoint, "/"), mode: 0o755, data: bin}}, s.created)
	if err != nil {
		return nil, err
	}

	created := v1.Time{Time: s.created.UTC()}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: s.platform.Architecture,
		OS:           s.platform.OS,
		Variant:      s.platform.Variant,
		Created:      created,
		Config: v1.Config{
			User:       fmt.Sprintf("%d:%d", nonroot, nonroot),
			Entrypoint: []string{entrypoint},
			WorkingDir: "/",
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"SSL_CERT_FILE=/" + caBundle,
			},
			Labels: s.labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "imagebuild: /etc/passwd, /etc/group, CA roots, /home/nonroot, /tmp"}},
		mutate.Addendum{Layer: manager, History: v1.History{Created: created, CreatedBy: "imagebuild: " + entrypoint}},
	)
}
