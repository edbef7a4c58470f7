package validation

import (
	"encoding/json"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// FuzzValidateRayCluster: any RayCluster the API could hand the reconciler
// is accepted or refused without a panic, the same way every time, without
// being modified, and a refusal names a layer and a field (the webhook
// turns it into a field error). An accepted cluster is still accepted after
// a JSON round trip, as the API server stores it.
func FuzzValidateRayCluster(f *testing.F) {
	samples := raytesting.SampleClusters(f)
	for _, s := range samples {
		f.Add(s, false)
		f.Add(s, true)
	}
	for _, s := range raytesting.HostileClusters(f, samples[0]) {
		f.Add(s, false)
	}
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"headGroupSpec":{"template":{"spec":{"containers":[{"name":"r"}]}}},`+
		`"workerGroupSpecs":[{"groupName":"g","minReplicas":-1,"template":{"spec":{"containers":[{"name":"w"}]}}}]}}`), false)
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"authOptions":{"mode":"token"},"rayVersion":"x.y",`+
		`"headGroupSpec":{"template":{"spec":{"containers":[{"name":"r","env":[{"name":"RAY_enable_autoscaler_v2","value":"1"}]}]}}}}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, allowSuspend bool) {
		cluster, ok := raytesting.DecodeCluster(data)
		if !ok {
			return
		}
		opts := SpecValidationOptions{AllowWorkerGroupSuspend: allowSuspend}
		before := cluster.DeepCopy()
		err := Validate(cluster, opts)
		if !equality.Semantic.DeepEqual(before, cluster) {
			t.Fatal("Validate modified the cluster")
		}
		again := Validate(cluster, opts)
		if (err == nil) != (again == nil) || (err != nil && (err.Layer != again.Layer || err.Error() != again.Error())) {
			t.Fatalf("Validate is not deterministic: %v, then %v", err, again)
		}
		if err != nil {
			switch err.Layer {
			case ValidationLayerMetadata, ValidationLayerSpec, ValidationLayerUpgradeOptions, ValidationLayerStatus:
			default:
				t.Fatalf("unknown layer %q", err.Layer)
			}
			if err.Error() == "" || err.EventReason() == "" || err.EventMessage(cluster.Namespace, cluster.Name) == "" {
				t.Fatalf("empty message or reason for %#v", err)
			}
			if !errors.Is(err, err.Err) {
				t.Fatal("ValidationError does not unwrap to its cause")
			}
			fe := AsFieldError(err.Err, specPath)
			if fe == nil || fe.Field == "" || fe.Detail == "" {
				t.Fatalf("no field error for %v: %#v", err, fe)
			}
			return
		}
		// What validation promises to the builders.
		if len(cluster.Spec.HeadGroupSpec.Template.Spec.Containers) == 0 {
			t.Fatal("accepted a head without containers")
		}
		for i := range cluster.Spec.WorkerGroupSpecs {
			if len(cluster.Spec.WorkerGroupSpecs[i].Template.Spec.Containers) == 0 {
				t.Fatalf("accepted worker group %d without containers", i)
			}
		}
		if msgs := validation.IsDNS1035Label(cluster.Name); len(msgs) > 0 || len(cluster.Name) > MaxRayClusterNameLength {
			t.Fatalf("accepted cluster name %q: %v", cluster.Name, msgs)
		}
		raw, merr := json.Marshal(cluster)
		if merr != nil {
			t.Fatalf("an accepted cluster does not marshal: %v", merr)
		}
		stored := &rayv1.RayCluster{}
		if uerr := json.Unmarshal(raw, stored); uerr != nil {
			t.Fatalf("an accepted cluster does not unmarshal: %v", uerr)
		}
		if err := Validate(stored, opts); err != nil {
			t.Fatalf("accepted, but refused after a JSON round trip: %v\n%s", err, raw)
		}
	})
}
