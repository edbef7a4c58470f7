package plugin

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// recorder implements every extension point and logs its calls.
type recorder struct {
	name string
	log  *[]string
	fail bool
}

func (r recorder) Name() string { return r.name }
func (r recorder) note(point string) error {
	*r.log = append(*r.log, point+":"+r.name)
	if r.fail {
		return errors.New("boom")
	}
	return nil
}
func (r recorder) Validate(*Info, *trainer.TrainJob, *trainer.TrainJob) field.ErrorList {
	_ = r.note("validate")
	return field.ErrorList{field.Invalid(field.NewPath(r.name), nil, "")}
}
func (r recorder) EnforceMLPolicy(*Info, *trainer.TrainJob) error       { return r.note("ml") }
func (r recorder) EnforcePodGroupPolicy(*Info, *trainer.TrainJob) error { return r.note("pg") }
func (r recorder) IdentifyPodNetwork(*Info, *trainer.TrainJob) error    { return r.note("net") }
func (r recorder) Build(context.Context, client.Reader, *Info, *trainer.TrainJob) ([]Component, error) {
	return []Component{{Object: &trainer.TrainJob{}}}, r.note("build")
}

func TestExtensionPointsRunInRegistrationOrder(t *testing.T) {
	var log []string
	names := []string{"c", "a", "d", "b"}
	var plugins []Plugin
	for _, n := range names {
		plugins = append(plugins, recorder{name: n, log: &log})
	}
	fw, err := New(plugins...)
	if err != nil {
		t.Fatal(err)
	}
	// Repeat: a map-based registry would shuffle between runs.
	for range 5 {
		log = nil
		info, job := &Info{}, &trainer.TrainJob{}
		errs := fw.RunCustomValidationPlugins(info, nil, job)
		_ = fw.RunEnforceMLPolicyPlugins(info, job)
		_ = fw.RunEnforcePodGroupPolicyPlugins(info, job)
		_ = fw.RunPodNetworkPlugins(info, job)
		comps, _ := fw.RunComponentBuilderPlugins(context.Background(), nil, info, job)
		var want []string
		for _, point := range []string{"validate", "ml", "pg", "net", "build"} {
			for _, n := range names {
				want = append(want, point+":"+n)
			}
		}
		if diff := cmp.Diff(want, log); diff != "" {
			t.Fatalf("call order (-want +got):\n%s", diff)
		}
		if len(errs) != 4 || errs[0].Field != "c" || len(comps) != 4 {
			t.Fatalf("errors %v, components %d", errs, len(comps))
		}
	}
	if diff := cmp.Diff(names, fw.PluginNames()); diff != "" {
		t.Errorf("PluginNames (-want +got):\n%s", diff)
	}
}

func TestFirstFailureStopsAnExtensionPoint(t *testing.T) {
	var log []string
	fw, err := New(recorder{name: "a", log: &log}, recorder{name: "b", log: &log, fail: true}, recorder{name: "c", log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.RunEnforceMLPolicyPlugins(&Info{}, &trainer.TrainJob{}); err == nil {
		t.Fatal("want the plugin's error")
	}
	if comps, err := fw.RunComponentBuilderPlugins(context.Background(), nil, &Info{}, &trainer.TrainJob{}); err == nil || comps != nil {
		t.Fatalf("build: %v, %v", comps, err)
	}
	if diff := cmp.Diff([]string{"ml:a", "ml:b", "build:a", "build:b"}, log); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestNewRejectsDuplicatesAndNil(t *testing.T) {
	var log []string
	if _, err := New(recorder{name: "a", log: &log}, recorder{name: "a", log: &log}); err == nil {
		t.Error("duplicate names accepted")
	}
	if _, err := New(nil); err == nil {
		t.Error("nil plugin accepted")
	}
}

func TestBuildErrorIsDetectedThroughWrapping(t *testing.T) {
	err := NewBuildError("bad %s", "template")
	if !IsBuildError(err) || !IsBuildError(errors.Join(errors.New("x"), err)) || IsBuildError(errors.New("plain")) {
		t.Error("IsBuildError misclassifies")
	}
}
