// releasecheck reads what a release stamps, without running anything.
//
//	releasecheck version BINARY WANT
//	  prints "exact V": the value of github.com/gantry-dev/gantry/pkg/version.Version,
//	  read through the binary's symbol table; or, for a stripped binary
//	  (make image's, -s -w), "search WANT" when its data holds a Go string
//	  header (pointer, length) whose bytes are WANT, and fails otherwise.
//	releasecheck image TARBALL OUT
//	  prints key=value lines read from a make image tarball (docker-archive
//	  manifest.json, OCI index.json, image config) and writes the file the
//	  image's entrypoint names, from its last layer, to OUT.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"debug/macho"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

const versionSymbol = "github.com/gantry-dev/gantry/pkg/version.Version"

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "version":
		err = version(os.Args[2], os.Args[3])
	case len(os.Args) == 4 && os.Args[1] == "image":
		err = image(os.Args[2], os.Args[3])
	default:
		err = errors.New("usage: releasecheck version BINARY WANT | image TARBALL OUT")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
}

type section struct {
	addr, size uint64
	r          io.ReaderAt
	writable   bool
}

type program struct {
	sections []section
	order    binary.ByteOrder
	ptr      int
	symbols  map[string]uint64 // nil: no symbol table
}

func open(path string) (*program, error) {
	if f, err := elf.Open(path); err == nil {
		p := &program{order: f.ByteOrder, ptr: 8}
		if f.Class == elf.ELFCLASS32 {
			p.ptr = 4
		}
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_ALLOC != 0 && s.Type != elf.SHT_NOBITS {
				p.sections = append(p.sections, section{s.Addr, s.Size, s, s.Flags&elf.SHF_WRITE != 0})
			}
		}
		if syms, err := f.Symbols(); err == nil {
			p.symbols = map[string]uint64{}
			for _, s := range syms {
				p.symbols[s.Name] = s.Value
			}
		}
		return p, nil
	}
	f, err := macho.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: neither ELF nor Mach-O", path)
	}
	p := &program{order: f.ByteOrder, ptr: 4}
	if f.Magic == macho.Magic64 {
		p.ptr = 8
	}
	for _, s := range f.Sections {
		if t := s.Flags & 0xff; t == 0x1 || t == 0xc { // zero-fill
			continue
		}
		p.sections = append(p.sections, section{s.Addr, s.Size, s, strings.HasPrefix(s.Seg, "__DATA")})
	}
	if f.Symtab != nil && len(f.Symtab.Syms) > 0 {
		p.symbols = map[string]uint64{}
		for _, s := range f.Symtab.Syms {
			p.symbols[strings.TrimPrefix(s.Name, "_")] = s.Value
		}
	}
	return p, nil
}

func (p *program) read(addr, n uint64) ([]byte, error) {
	for _, s := range p.sections {
		if addr >= s.addr && addr+n <= s.addr+s.size {
			b := make([]byte, n)
			_, err := s.r.ReadAt(b, int64(addr-s.addr))
			return b, err
		}
	}
	return nil, fmt.Errorf("address %#x is in no section", addr)
}

func (p *program) word(b []byte) uint64 {
	if p.ptr == 4 {
		return uint64(p.order.Uint32(b))
	}
	return p.order.Uint64(b)
}

func version(path, want string) error {
	p, err := open(path)
	if err != nil {
		return err
	}
	if p.symbols != nil {
		addr, ok := p.symbols[versionSymbol]
		if !ok {
			return fmt.Errorf("%s has no symbol %s", path, versionSymbol)
		}
		hdr, err := p.read(addr, uint64(2*p.ptr))
		if err != nil {
			return err
		}
		data, n := p.word(hdr[:p.ptr]), p.word(hdr[p.ptr:])
		if n > 1024 {
			return fmt.Errorf("%s: %s is %d bytes long", path, versionSymbol, n)
		}
		v, err := p.read(data, n)
		if err != nil {
			return err
		}
		fmt.Printf("exact %s\n", v)
		return nil
	}
	// Stripped: find WANT's bytes, then a string header pointing at them.
	at := map[uint64]bool{}
	for _, s := range p.sections {
		b := make([]byte, s.size)
		if _, err := s.r.ReadAt(b, 0); err != nil {
			return err
		}
		for off := 0; ; {
			i := bytes.Index(b[off:], []byte(want))
			if i < 0 {
				break
			}
			at[s.addr+uint64(off+i)] = true
			off += i + 1
		}
	}
	for _, s := range p.sections {
		if !s.writable {
			continue
		}
		b := make([]byte, s.size)
		if _, err := s.r.ReadAt(b, 0); err != nil {
			return err
		}
		for off := 0; off+2*p.ptr <= len(b); off += p.ptr {
			if p.word(b[off+p.ptr:]) == uint64(len(want)) && at[p.word(b[off:])] {
				fmt.Printf("search %s\n", want)
				return nil
			}
		}
	}
	return fmt.Errorf("%s is stripped and holds no Go string %q: not stamped with that version", path, want)
}

// entries calls fn for each regular file of the tar stream r.
func entries(r io.Reader, fn func(name string, r io.Reader) error) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if err := fn(strings.TrimPrefix(h.Name, "./"), tr); err != nil {
				return err
			}
		}
	}
}

func image(tarball, out string) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	small := map[string][]byte{}
	if err := entries(f, func(name string, r io.Reader) error {
		if name == "manifest.json" || name == "index.json" {
			b, err := io.ReadAll(r)
			small[name] = b
			return err
		}
		return nil
	}); err != nil {
		return err
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(small["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		return fmt.Errorf("%s: manifest.json: want one image (%v)", tarball, err)
	}
	var index struct {
		Manifests []struct {
			Annotations map[string]string
			Platform    struct{ OS, Architecture, Variant string }
		}
	}
	if err := json.Unmarshal(small["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		return fmt.Errorf("%s: index.json: want one manifest (%v)", tarball, err)
	}
	m, ix := manifest[0], index.Manifests[0]
	if len(m.Layers) == 0 {
		return fmt.Errorf("%s: the image has no layers", tarball)
	}
	var config struct {
		Config struct {
			Labels     map[string]string
			Entrypoint []string
		} `json:"config"`
	}
	last := m.Layers[len(m.Layers)-1]
	wrote := false
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var layer []byte
	if err := entries(f, func(name string, r io.Reader) error {
		switch name {
		case m.Config:
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			return json.Unmarshal(b, &config)
		case last:
			b, err := io.ReadAll(r)
			layer = b
			return err
		}
		return nil
	}); err != nil {
		return err
	}
	if len(config.Config.Entrypoint) == 0 || layer == nil {
		return fmt.Errorf("%s: no entrypoint in the config, or no blob %s", tarball, last)
	}
	entry := strings.TrimPrefix(config.Config.Entrypoint[0], "/")
	var lr io.Reader = bytes.NewReader(layer)
	if bytes.HasPrefix(layer, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(lr)
		if err != nil {
			return err
		}
		lr = zr
	}
	if err := entries(lr, func(name string, r io.Reader) error {
		if strings.TrimPrefix(name, "/") != entry {
			return nil
		}
		w, err := os.Create(out)
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(w)
		if _, err := io.Copy(bw, r); err != nil {
			w.Close()
			return err
		}
		wrote = true
		if err := bw.Flush(); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	}); err != nil {
		return err
	}
	if !wrote {
		return fmt.Errorf("%s: the last layer has no /%s", tarball, entry)
	}
	plat := ix.Platform.OS + "/" + ix.Platform.Architecture
	if ix.Platform.Variant != "" {
		plat += "/" + ix.Platform.Variant
	}
	fmt.Printf("repotags=%s\n", strings.Join(m.RepoTags, " "))
	fmt.Printf("ref_name=%s\n", ix.Annotations["org.opencontainers.image.ref.name"])
	fmt.Printf("containerd_name=%s\n", ix.Annotations["io.containerd.image.name"])
	fmt.Printf("label_version=%s\n", config.Config.Labels["org.opencontainers.image.version"])
	fmt.Printf("entrypoint=/%s\n", entry)
	fmt.Printf("platform=%s\n", plat)
	return nil
}
