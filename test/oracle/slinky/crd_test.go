package slinky_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"sigs.k8s.io/yaml"
)

// crdSchemas are the structural schemas of one side's slinky.slurm.net
// CRDs, by kind: what the API server prunes and defaults an object with
// before either operator reads it. Each side gets its own CRDs (Slinky
// v1.1.0's from its module, Gantry's from config/crd/bases), as each would
// be installed with its own chart.
type crdSchemas map[string]*structuralschema.Structural

func loadSchemas(t *testing.T, dir string) crdSchemas {
	t.Helper()
	out := crdSchemas{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "slinky.slurm.net_") {
			continue
		}
		s, kind, err := readSchema(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[kind] = s
	}
	if len(out) < 5 {
		t.Fatalf("%s: only %d slinky.slurm.net CRDs", dir, len(out))
	}
	return out
}

func readSchema(path string) (*structuralschema.Structural, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != "v1beta1" || v.Schema == nil {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
		return s, crd.Spec.Names.Kind, nil
	}
	return nil, "", fmt.Errorf("%s: no v1beta1 schema", path)
}

// asStored is a copy of obj as the API server stores it under these CRDs
// (unknown fields pruned, defaults applied); objects of other kinds are
// copied as they are, but a Secret's stringData is stored as data.
func (c crdSchemas) asStored(obj map[string]any) (map[string]any, error) {
	out := deepCopy(obj)
	kind, _ := out["kind"].(string)
	if out["apiVersion"] == "v1" && kind == "Secret" {
		storeStringData(out)
		return out, nil
	}
	s := c[kind]
	if s == nil {
		if strings.HasPrefix(fmt.Sprint(out["apiVersion"]), "slinky.slurm.net/") {
			return nil, fmt.Errorf("no schema for kind %q", kind)
		}
		return out, nil
	}
	pruning.Prune(out, s, true)
	defaulting.Default(out, s)
	return out, nil
}
