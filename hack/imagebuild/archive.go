package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gantry-dev/gantry/hack/internal/imagefile"
)

// The archive is laid out like `docker save` (Docker 25+) writes it: an OCI
// image layout (oci-layout, index.json, blobs/sha256/<hex>) plus the
// docker-archive manifest.json pointing at the same blobs. `docker load`
// (any version) reads manifest.json; containerd's importer, used by
// `kind load image-archive`, reads the OCI layout and names the image from
// index.json's io.containerd.image.name annotation.

// archiveEntry is one regular file (or, when data is nil and the name ends
// in "/", a directory) in the archive.
type archiveEntry struct {
	name string
	data []byte
	open func() (io.ReadCloser, error) // instead of data, for layers
	size int64
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// containerdName is tag as containerd and Docker spell it, e.g.
// docker.io/library/gantry:dev for gantry:dev.
func containerdName(tag name.Tag) string {
	reg := tag.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + tag.RepositoryStr() + ":" + tag.TagStr()
}

// archiveEntries lists the archive's files for img tagged tag.
func archiveEntries(img v1.Image, tag name.Tag, platform v1.Platform) ([]archiveEntry, error) {
	cfgName, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}

	entries := []archiveEntry{
		{name: "blobs/"},
		{name: "blobs/sha256/"},
		{name: blobPath(cfgName), data: cfg},
		{name: blobPath(digest), data: manifest},
	}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		size, err := l.Size()
		if err != nil {
			return nil, err
		}
		layerPaths = append(layerPaths, blobPath(d))
		if slices.ContainsFunc(entries, func(e archiveEntry) bool { return e.name == blobPath(d) }) {
			continue
		}
		entries = append(entries, archiveEntry{name: blobPath(d), open: l.Compressed, size: size})
	}

	// docker-archive manifest.json: go-containerregistry's, for its RepoTags
	// rules, with the paths moved into blobs/.
	dm, err := tarball.ComputeManifest(map[name.Reference]v1.Image{tag: img})
	if err != nil {
		return nil, err
	}
	if len(dm) != 1 {
		return nil, fmt.Errorf("manifest.json has %d entries, want 1", len(dm))
	}
	dm[0].Config = blobPath(cfgName)
	dm[0].Layers = layerPaths
	dockerManifest, err := json.Marshal(dm)
	if err != nil {
		return nil, err
	}

	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mt,
			Digest:    digest,
			Size:      int64(len(manifest)),
			Platform:  &platform,
			Annotations: map[string]string{
				"io.containerd.image.name":          containerdName(tag),
				"org.opencontainers.image.ref.name": tag.TagStr(),
			},
		}},
	})
	if err != nil {
		return nil, err
	}

	entries = append(entries,
		archiveEntry{name: "index.json", data: index},
		archiveEntry{name: "manifest.json", data: dockerManifest},
		archiveEntry{name: "oci-layout", data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	)
	slices.SortFunc(entries, func(a, b archiveEntry) int { return strings.Compare(a.name, b.name) })
	return entries, nil
}

// writeArchive writes img as a reproducible tarball: entries in name order,
// owned by 0:0, all with mtime.
func writeArchive(w io.Writer, img v1.Image, tag name.Tag, platform v1.Platform, mtime time.Time) error {
	entries, err := archiveEntries(img, tag, platform)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, ModTime: mtime, Format: tar.FormatUSTAR}
		switch {
		case e.open != nil:
			h.Size = e.size
		case strings.HasSuffix(e.name, "/"):
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		default:
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
		if e.open == nil {
			if _, err := tw.Write(e.data); err != nil {
				return err
			}
			continue
		}
		rc, err := e.open()
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
	}
	return tw.Close()
}

// writeArchiveFile writes the archive to path atomically, so a failed build
// leaves no truncated tarball.
func writeArchiveFile(path string, img v1.Image, tag name.Tag, platform v1.Platform, mtime time.Time) error {
	return imagefile.WriteAtomic(path, func(w io.Writer) error { return writeArchive(w, img, tag, platform, mtime) })
}
