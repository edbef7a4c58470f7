package trainer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"sigs.k8s.io/yaml"
)

// crdSchemas are the structural schemas of one side's trainer CRDs, by
// kind: what the API server prunes and defaults an object with before
// either operator reads it. Each side gets its own CRDs (Trainer v2.3.0's,
// or Gantry's), as each would be installed with its own chart.
type crdSchemas map[string]*structuralschema.Structural

var (
	schemaOnce sync.Once
	schemas    map[string]crdSchemas // "trainer" and "gantry"
	schemaErr  error
)

// loadSchemas reads both sides' CRDs once.
func loadSchemas(t *testing.T) map[string]crdSchemas {
	t.Helper()
	schemaOnce.Do(func() {
		schemas = map[string]crdSchemas{}
		for side, dir := range map[string]string{
			"trainer": filepath.Join(trainerModuleDir(t), "manifests", "base", "crds"),
			"gantry":  filepath.Join(repoRoot(t), "config", "crd", "bases"),
		} {
			schemas[side] = crdSchemas{}
			for _, file := range []string{"clustertrainingruntimes", "trainjobs"} {
				s, kind, err := readSchema(filepath.Join(dir, "trainer.kubeflow.org_"+file+".yaml"))
				if err != nil {
					schemaErr = err
					return
				}
				schemas[side][kind] = s
			}
		}
	})
	if schemaErr != nil {
		t.Fatal(schemaErr)
	}
	return schemas
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
		if v.Name != "v1alpha1" || v.Schema == nil {
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
	return nil, "", fmt.Errorf("%s: no v1alpha1 schema", path)
}

// asStored is a copy of obj as the API server stores it under these
// CRDs: unknown fields pruned, defaults applied.
func (c crdSchemas) asStored(obj map[string]any) (map[string]any, error) {
	raw, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := yaml.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	kind, _ := out["kind"].(string)
	s := c[kind]
	if s == nil {
		return nil, fmt.Errorf("no schema for kind %q", kind)
	}
	pruning.Prune(out, s, true)
	defaulting.Default(out, s)
	return out, nil
}
