package slurmctld

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestRenderSlurmConfGolden(t *testing.T) {
	nodeSets := []slinkyv1beta1.NodeSet{
		*slinkytesting.MakeNodeSet("gpu", "slinky", "slurm").Partition("Default=NO MaxTime=UNLIMITED").Obj(),
		*slinkytesting.MakeNodeSet("cpu", "slinky", "slurm").Partition("").Obj(),
		*slinkytesting.MakeNodeSet("debug-set", "slinky", "slurm").Hostname("dbg-").Obj(),
	}
	tests := []struct {
		golden     string
		controller *slinkyv1beta1.Controller
		in         ConfigInputs
	}{
		{
			golden:     "minimal.conf",
			controller: slinkytesting.MakeController("slurm", "slinky").Keys("keys").Obj(),
		},
		{
			golden:     "nodesets.conf",
			controller: slinkytesting.MakeController("slurm", "slinky").Keys("keys").ClusterName("hpc").Obj(),
			in:         ConfigInputs{NodeSets: nodeSets},
		},
		{
			golden: "extraconf-merged.conf",
			controller: slinkytesting.MakeController("slurm", "slinky").Keys("keys").
				ExtraConf("# site settings\nSlurmctldParameters=enable_stepmgr,reconfig_on_restart\nAuthAltParameters=jwt_key=/elsewhere,disable_token_creation\nSchedulerParameters=\\\n  bf_continue\nNodeName=static CPUs=4\n").Obj(),
		},
		{
			golden: "everything.conf",
			controller: slinkytesting.MakeController("slurm", "slinky").Keys("keys").Jwks("jwks", "jwks.json").
				Accounting("slurm").Metrics().Obj(),
			in: ConfigInputs{
				Accounting:             slinkytesting.MakeAccounting("slurm", "slinky").Obj(),
				NodeSets:               nodeSets[:1],
				PrologScripts:          []string{"90-last.sh", "10-first.sh"},
				EpilogScripts:          []string{"epilog.sh"},
				PrologSlurmctldScripts: []string{"ctld-prolog.sh"},
				EpilogSlurmctldScripts: []string{"ctld-epilog.sh"},
			},
		},
		{
			golden:     "external.conf",
			controller: slinkytesting.MakeController("slurm", "slinky").External("slurmctld.example.com", 6817).Obj(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			before := tc.controller.DeepCopy()
			var got string
			if tc.controller.Spec.External {
				got = RenderExternalSlurmConf(tc.controller, tc.in.Accounting)
			} else {
				got = RenderSlurmConf(tc.controller, tc.in)
			}
			compareGolden(t, filepath.Join("testdata", tc.golden), got)
			if diff := cmp.Diff(before, tc.controller); diff != "" {
				t.Errorf("rendering modified the Controller:\n%s", diff)
			}
		})
	}
	t.Run("cgroup.conf", func(t *testing.T) {
		compareGolden(t, filepath.Join("testdata", "cgroup.conf"), RenderCgroupConf())
	})
}

func TestRenderSlurmConfIsDeterministic(t *testing.T) {
	c := slinkytesting.MakeController("slurm", "slinky").Keys("keys").Obj()
	a := []slinkyv1beta1.NodeSet{*slinkytesting.MakeNodeSet("a", "slinky", "slurm").Obj(), *slinkytesting.MakeNodeSet("b", "slinky", "slurm").Obj()}
	b := []slinkyv1beta1.NodeSet{a[1], a[0]}
	if RenderSlurmConf(c, ConfigInputs{NodeSets: a}) != RenderSlurmConf(c, ConfigInputs{NodeSets: b}) {
		t.Error("the order NodeSets are listed in changes slurm.conf, which would roll slurmctld for nothing")
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); run `go test -run %s -update` if the change is intended:\n%s", path, t.Name(), diff)
	}
}
