package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// UndescribedFields reads the schema of kind in group/version from the API
// server's OpenAPI v3 document (what `kubectl explain` shows) and returns
// the dotted field paths among paths that have no description. The API
// server publishes a CRD's schema a moment after the CRD is established, so
// it waits up to 30 s for the document.
func UndescribedFields(ctx context.Context, cfg *rest.Config, group, version, kind string, paths ...string) ([]string, error) {
	rc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(cfg.Host, "/") + "/openapi/v3/apis/" + group + "/" + version
	var resp *http.Response
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		if resp, err = rc.Do(req); err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusOK || time.Now().After(deadline) {
			break
		}
		_ = resp.Body.Close()
	}
	defer func() { _ = resp.Body.Close() }()
	type schema struct {
		Description string             `json:"description"`
		Properties  map[string]*schema `json:"properties"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]*schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding %s (%s): %w", url, resp.Status, err)
	}
	var root *schema
	for name, s := range doc.Components.Schemas {
		if strings.HasSuffix(name, "."+version+"."+kind) {
			root = s
		}
	}
	if root == nil {
		return nil, fmt.Errorf("%s publishes no %s schema", url, kind)
	}
	var missing []string
	for _, path := range paths {
		s := root
		for _, p := range strings.Split(path, ".") {
			if s = s.Properties[p]; s == nil {
				break
			}
		}
		if s == nil || s.Description == "" {
			missing = append(missing, path)
		}
	}
	return missing, nil
}
