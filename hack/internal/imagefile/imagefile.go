// Package imagefile holds what the image builders under hack/ (imagebuild,
// testimage) share: the build time from SOURCE_DATE_EPOCH and writing an
// image tarball so that a failed build never leaves a truncated file.
package imagefile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// SourceDateEpoch is the build time in Unix seconds that
// $SOURCE_DATE_EPOCH (the value given) asks for; 0 when it is empty.
func SourceDateEpoch(value string) (int64, error) {
	if value == "" {
		return 0, nil
	}
	t, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
	}
	return t, nil
}

// WriteAtomic writes path through write: into a temporary file in the same
// directory (mode 0644), renamed into place only when write and close
// succeed. On any error the temporary file is removed and path is untouched.
func WriteAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
