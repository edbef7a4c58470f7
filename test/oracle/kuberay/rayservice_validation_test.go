package kuberay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	krv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	krutils "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	krfeatures "github.com/ray-project/kuberay/ray-operator/pkg/features"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// The RayService validation oracle: every row of Gantry's RayService rule
// table (raytesting.RayServiceRuleCases) and every RayService sample of
// KubeRay v1.7.0, each with KubeRay's RayServiceIncrementalUpgrade gate off
// (v1.6's default) and on (v1.7.0's: the gate went beta), goes through
// Gantry's validation.ValidateRayService and through KubeRay v1.6.2's
// utils.ValidateRayServiceMetadata then ValidateRayServiceSpec (its
// reconciler's order). The verdicts, accept or the refusing layer, must
// agree, except for the rows below.
//
// v1.6.2 to v1.7.0 (git diff v1.6.2 v1.7.0 --
// ray-operator/controllers/ray/utils/validation.go) changed one RayService
// rule: ValidateClusterUpgradeOptions also requires stepSizePercent <=
// maxSurgePercent. It applies only to NewClusterWithIncrementalUpgrade,
// which Gantry refuses whatever its options, so no verdict depends on it.
// The RayCluster rules v1.7.0 added (networkPolicy, tlsOptions,
// historyServerOptions, the GCS rocksdb backend and its storage) are on
// fields v1.6.2's API lacks, as is RayService's spec.suspend (new in
// v1.7.0, not validated): the rows using them (V17Only) are left out here;
// Gantry refuses each of the former (pkg/controller/ray/validation's
// tests). v1.6.2 also panics on an upgradeStrategy without a type when the
// gate is on (fixed in v1.7.0); see the test.
//
// Deliberate differences:
//   - Gantry does not implement incremental upgrades: it refuses
//     upgradeStrategy.type NewClusterWithIncrementalUpgrade and any
//     upgradeStrategy.clusterUpgradeOptions. KubeRay with the gate off
//     admits both (the type is valid; its options are not checked) and then
//     never replaces the cluster; with the gate on it admits a valid
//     incremental upgrade and ignores options under another type.
//   - Worker group names must be unique and the CRD's minReplicas and
//     maxReplicas defaults are relied on, as for RayJob (validation_test.go).

// serviceVerdictException is a row where Gantry's verdict deliberately
// differs from KubeRay's, with the gate on or off.
type serviceVerdictException struct {
	gateOn          bool
	gantry, kuberay string // the refusing layer, "" for accepted
	reason          string
}

const (
	incrementalReason = "Gantry does not implement incremental upgrades and refuses them; " +
		"KubeRay admits the type (gate off: and then does not upgrade at all)"
	optionsReason = "Gantry refuses clusterUpgradeOptions (the API: 'RayServiceIncrementalUpgrade feature gate must be " +
		"enabled to set ClusterUpgradeOptions'); KubeRay checks them only for NewClusterWithIncrementalUpgrade with the gate on"
)

var serviceVerdictExceptions = []struct {
	name string
	serviceVerdictException
}{
	{"upgrade NewClusterWithIncrementalUpgrade", serviceVerdictException{false, "Spec", "", incrementalReason}},
	{"upgrade NewClusterWithIncrementalUpgrade", serviceVerdictException{true, "Spec", "", incrementalReason}},
	{"upgrade NewClusterWithIncrementalUpgrade without options", serviceVerdictException{false, "Spec", "", incrementalReason}},
	{"sample ray-service.incremental-upgrade.yaml", serviceVerdictException{false, "Spec", "", incrementalReason}},
	{"sample ray-service.incremental-upgrade.yaml", serviceVerdictException{true, "Spec", "", incrementalReason}},
	{"clusterUpgradeOptions with NewCluster", serviceVerdictException{false, "Spec", "", optionsReason}},
	{"clusterUpgradeOptions with NewCluster", serviceVerdictException{true, "Spec", "", optionsReason}},
	{"clusterUpgradeOptions without a type", serviceVerdictException{false, "Spec", "", optionsReason}},
	{"clusterUpgradeOptions without a type", serviceVerdictException{true, "Spec", "", optionsReason}},
	{"duplicate worker group names", serviceVerdictException{false, "Spec", "", "as for RayJob: KubeRay checks unique group names only in its RayCluster webhook"}},
	{"duplicate worker group names", serviceVerdictException{true, "Spec", "", "as for RayJob: KubeRay checks unique group names only in its RayCluster webhook"}},
	{"worker group without minReplicas and maxReplicas", serviceVerdictException{false, "", "Spec", "as for RayJob: the CRD defaults them"}},
	{"worker group without minReplicas and maxReplicas", serviceVerdictException{true, "", "Spec", "as for RayJob: the CRD defaults them"}},
}

type serviceOracleCase struct {
	name   string
	svc    *rayv1.RayService
	gateOn bool
}

func serviceOracleCorpus(t *testing.T) []serviceOracleCase {
	var cases []serviceOracleCase
	for _, tc := range raytesting.RayServiceRuleCases() {
		if tc.V17Only {
			continue
		}
		for _, on := range []bool{false, true} {
			cases = append(cases, serviceOracleCase{name: tc.Name, svc: tc.Svc, gateOn: on})
		}
	}
	samples := raytesting.SampleRayServices(t)
	if len(samples) != 16 {
		t.Fatalf("%d RayService samples, want KubeRay v1.7.0's 16", len(samples))
	}
	for _, s := range samples {
		svc, err := s.Decode()
		if err != nil {
			t.Fatal(err)
		}
		withServiceCRDDefaults(svc)
		for _, on := range []bool{false, true} {
			cases = append(cases, serviceOracleCase{name: "sample " + s.File, svc: svc, gateOn: on})
		}
	}
	return cases
}

// withServiceCRDDefaults applies the CRD defaults validation reads, as the
// API server does before anyone sees a RayService. KubeRay dereferences
// maxSurgePercent without a check: the CRD defaults it to 100.
func withServiceCRDDefaults(svc *rayv1.RayService) {
	cs := &svc.Spec.RayClusterSpec
	for i := range cs.WorkerGroupSpecs {
		g := &cs.WorkerGroupSpecs[i]
		if g.MinReplicas == nil {
			g.MinReplicas = ptr.To[int32](0)
		}
		if g.MaxReplicas == nil {
			g.MaxReplicas = ptr.To[int32](math.MaxInt32)
		}
	}
	if s := svc.Spec.UpgradeStrategy; s != nil && s.ClusterUpgradeOptions != nil && s.ClusterUpgradeOptions.MaxSurgePercent == nil {
		s.ClusterUpgradeOptions.MaxSurgePercent = ptr.To[int32](100)
	}
}

// kuberayRayService converts Gantry's RayService to KubeRay's through
// JSON, refusing a field KubeRay's type does not have.
func kuberayRayService(t *testing.T, svc *rayv1.RayService) *krv1.RayService {
	t.Helper()
	raw, err := json.Marshal(svc)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	out := &krv1.RayService{}
	if err := dec.Decode(out); err != nil {
		t.Fatalf("converting to KubeRay's RayService: %v", err)
	}
	return out
}

func kuberayServiceVerdict(svc *krv1.RayService) (string, error) {
	if err := krutils.ValidateRayServiceMetadata(svc.ObjectMeta); err != nil {
		return "Metadata", err
	}
	if err := krutils.ValidateRayServiceSpec(svc); err != nil {
		return "Spec", err
	}
	return "", nil
}

func TestRayServiceValidationMatchesKubeRays(t *testing.T) {
	exceptions := map[string]serviceVerdictException{}
	key := func(name string, on bool) string { return fmt.Sprintf("%s/gate=%v", name, on) }
	for _, e := range serviceVerdictExceptions {
		exceptions[key(e.name, e.gateOn)] = e.serviceVerdictException
	}
	seen := map[string]bool{}
	agreed, refused := 0, 0
	// Gantry's options: the RayJobDeletionPolicy gate at its default (on),
	// as in KubeRay; it only decides worker group suspend, which no row
	// here sets.
	opts := validation.RayServiceValidationOptions{Cluster: validation.SpecValidationOptions{AllowWorkerGroupSuspend: true}}
	for _, c := range serviceOracleCorpus(t) {
		k := key(c.name, c.gateOn)
		t.Run(k, func(t *testing.T) {
			// v1.6.2 dereferences upgradeStrategy.type without a nil check
			// when the gate is on (v1.7.0 checks it): a strategy without a
			// type is not an incremental upgrade, which v1.7.0 judges as
			// v1.6.2 does with the gate off.
			gate := c.gateOn
			if s := c.svc.Spec.UpgradeStrategy; s != nil && s.Type == nil {
				gate = false
			}
			krfeatures.SetFeatureGateDuringTest(t, krfeatures.RayServiceIncrementalUpgrade, gate)
			want, krErr := kuberayServiceVerdict(kuberayRayService(t, c.svc))
			got := ""
			gErr := validation.ValidateRayService(c.svc.DeepCopy(), opts)
			if gErr != nil {
				got = string(gErr.Layer)
			}
			if exc, ok := exceptions[k]; ok {
				seen[k] = true
				if got != exc.gantry || want != exc.kuberay {
					t.Errorf("listed as a deliberate difference (Gantry %q, KubeRay %q: %s), but Gantry says %q (%v) and KubeRay %q (%v)",
						exc.gantry, exc.kuberay, exc.reason, got, gErr, want, krErr)
				}
				return
			}
			if got != want {
				t.Errorf("Gantry: %q (%v)\nKubeRay v1.6.2: %q (%v)", got, gErr, want, krErr)
				return
			}
			agreed++
			if got != "" {
				refused++
			}
		})
	}
	for k := range exceptions {
		if !seen[k] {
			t.Errorf("exception %q matches no row of the corpus", k)
		}
	}
	t.Logf("%d verdicts agree (%d refusals), %d rows are listed differences", agreed, refused, len(seen))
}
