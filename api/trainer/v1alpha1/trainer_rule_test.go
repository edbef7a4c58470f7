package v1alpha1_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// spec.trainer is immutable but for numNodes, which elastic jobs change.
// So every other field of Trainer must carry its own self == oldSelf rule,
// and the rule on spec.trainer must keep each from being added or removed:
// a field added to Trainer without both would silently become mutable.
func TestTrainerImmutabilityRulesNameEveryFieldButNumNodes(t *testing.T) {
	raw, err := os.ReadFile("trainjob_types.go")
	if err != nil {
		t.Fatal(err)
	}
	src := string(raw)
	onTrainer := regexp.MustCompile(`(?m)^\s*// \+kubebuilder:validation:XValidation:rule="([^"]*)",message="field is immutable"\n(?:\s*//.*\n)*\s*Trainer \*Trainer`).FindStringSubmatch(src)
	if onTrainer == nil {
		t.Fatal("no immutability rule on TrainJobSpec.Trainer")
	}
	presence := map[string]bool{}
	for _, m := range regexp.MustCompile(`has\(self\.(\w+)\) == has\(oldSelf\.(\w+)\)`).FindAllStringSubmatch(onTrainer[1], -1) {
		if m[1] != m[2] {
			t.Errorf("the rule compares has(self.%s) with has(oldSelf.%s)", m[1], m[2])
		}
		presence[m[1]] = true
	}
	start := strings.Index(src, "type Trainer struct {")
	end := start + strings.Index(src[start:], "\n}\n")
	if start < 0 || end < start {
		t.Fatal("type Trainer not found")
	}
	body := src[start:end]
	typ := reflect.TypeOf(trainer.Trainer{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		// The field's own markers: the comment lines right above it.
		own := regexp.MustCompile(`((?:\n\t//[^\n]*)*)\n\t` + f.Name + ` `).FindStringSubmatch(body)
		if own == nil {
			t.Fatalf("field %s not found in type Trainer", f.Name)
		}
		immutable := strings.Contains(own[1], `+kubebuilder:validation:XValidation:rule="self == oldSelf"`)
		if name == "numNodes" {
			if immutable || presence[name] {
				t.Errorf("numNodes is held immutable; elastic jobs change it")
			}
			continue
		}
		if !immutable {
			t.Errorf("spec.trainer.%s has no self == oldSelf rule of its own, so it is mutable", name)
		}
		if !presence[name] {
			t.Errorf("the rule on spec.trainer does not keep spec.trainer.%s from being added or removed", name)
		}
	}
}
