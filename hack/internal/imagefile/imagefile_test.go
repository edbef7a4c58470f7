package imagefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestSourceDateEpoch(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "1700000000": 1700000000} {
		got, err := SourceDateEpoch(in)
		if err != nil || got != want {
			t.Errorf("SourceDateEpoch(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := SourceDateEpoch("yesterday"); err == nil {
		t.Error("SourceDateEpoch(\"yesterday\") succeeded")
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A failed write leaves the old file and no temporary file.
	boom := errors.New("boom")
	if err := WriteAtomic(path, func(w io.Writer) error {
		_, _ = io.WriteString(w, "half")
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("WriteAtomic error = %v, want boom", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("after a failed write the file holds %q, want the old content", got)
	}
	if err := WriteAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	info, _ := os.Stat(path)
	if string(got) != "new" || info.Mode().Perm() != 0o644 {
		t.Errorf("file = %q mode %v, want \"new\" 0644", got, info.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the image: %v", len(entries), entries)
	}
}
