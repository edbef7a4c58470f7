// Command chartsize estimates the size of the Secret in which Helm stores a
// release of the chart, and fails above a limit. Helm (its Secret storage
// driver) writes the release as base64(gzip(JSON)), where the JSON holds the
// rendered manifest and the chart itself, every file base64-encoded; the
// API server refuses a Secret over 1 MiB, and then `helm install` fails.
// The estimate leaves out the release's small fields (values, metadata,
// hooks' status), so the limit given should keep a margin.
//
// Usage: go run ./hack/chartsize -limit BYTES CHART_DIR RENDERED_MANIFEST
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

type file struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

func main() {
	limit := flag.Int("limit", 900<<10, "fail when the estimate passes this many bytes")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: chartsize -limit BYTES CHART_DIR RENDERED_MANIFEST")
		os.Exit(2)
	}
	n, err := estimate(flag.Arg(0), flag.Arg(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartsize:", err)
		os.Exit(2)
	}
	fmt.Printf("chart size: the Helm release Secret is about %d KiB (limit %d KiB; the API server's is 1024 KiB)\n", n>>10, *limit>>10)
	if n > *limit {
		fmt.Fprintf(os.Stderr, "chartsize: about %d bytes, over the limit of %d: `helm install` would come close to or pass the 1 MiB Secret limit\n", n, *limit)
		os.Exit(1)
	}
}

func estimate(chartDir, manifestPath string) (int, error) {
	manifest, err := os.ReadFile(manifestPath)
	if err != nil {
		return 0, err
	}
	var files []file
	err = filepath.WalkDir(chartDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(chartDir, path)
		files = append(files, file{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return 0, err
	}
	release, err := json.Marshal(map[string]any{"manifest": string(manifest), "chart": map[string]any{"templates": files}})
	if err != nil {
		return 0, err
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if _, err := w.Write(release); err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return base64.StdEncoding.EncodedLen(gz.Len()), nil
}
