package slurmctld

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/extraconf"
	"github.com/gantry-dev/gantry/pkg/webhook"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// renderSeed is one FuzzRenderSlurmConf input.
type renderSeed struct {
	name, namespace, clusterName, extraConf string
	nodeSet1, hostname1, partition1         string
	nodeSet2, partition2                    string
	prolog                                  string
	flags                                   uint8
}

// renderSeeds are realistic values from Slinky slurm-operator v1.2.1: the
// extraConf lines of its Helm chart tests (helm/slurm/tests/controller_test.yaml)
// and of helm/slurm/values.yaml's extraConfMap example as the chart renders
// it; partition configs from internal/builder/controllerbuilder/
// controller_config_test.go and values.yaml; NodeSet names and hostnames
// from that test and helm/slurm/_vendor/*/example-values.yaml. Inputs
// that broke the properties are under testdata/fuzz/FuzzRenderSlurmConf.
var renderSeeds = []renderSeed{
	{name: "slurm", namespace: "slurm", extraConf: "MinJobAge=2", nodeSet1: "slurm-foo", hostname1: "foo-", partition2: "MaxTime=UNLIMITED OverSubscribe=EXCLUSIVE", nodeSet2: "slurm-bar"},
	{name: "slurm", namespace: "slinky", extraConf: "DebugFlags=Backfill\nSchedulerParameters=permit_job_expansion\n", nodeSet1: "a3-mega-nodes", partition1: "MaxTime=UNLIMITED PreemptMode=REQUEUE", flags: 1},
	{name: "slurm", namespace: "slinky", clusterName: "hpc", extraConf: "AccountingStorageTRES=gres/gpu\nGresTypes=gpu\nJobAcctGatherType=jobacct_gather/cgroup\n" +
		"MinJobAge=2\nProctrackType=proctrack/cgroup\nPrologFlags=Contain\nReturnToService=2\nSlurmctldDebug=debug2\n" +
		"SlurmctldParameters=enable_stepmgr\nSlurmSchedLogLevel=1\nSlurmdDebug=debug2\nTaskPlugin=task/affinity,task/cgroup\n",
		nodeSet1: "gpu-nodes", partition1: "Default=YES MaxTime=UNLIMITED", nodeSet2: "cpu", partition2: "State=UP MaxTime=UNLIMITED", prolog: "90-dcgm.sh", flags: 2},
	{name: "slurm", namespace: "default", extraConf: "DebugFlags=Backfill,Gang\nSlurmSchedLogLevel=1\n", nodeSet1: "slinky", partition1: "", flags: 4},
	{name: "slurm", namespace: "default", clusterName: "slurm.cluster_1", extraConf: "AuthAltParameters=disable_token_creation\nAuthInfo=ttl=60\n", flags: 3},
	// Hostile, handled: an Include, a comment in a partition config.
	{name: "s", namespace: "n", extraConf: "SlurmctldParameters=enable_stepmgr,\\\n  idle_on_node_suspend # comment\n", nodeSet1: "a", partition1: "MaxTime=1", nodeSet2: "b"},
	{name: "s", namespace: "n", extraConf: "Include /etc/slurm/site.conf\nNodeName=static CPUs=4\n", nodeSet1: "x", partition1: "Nodes=ALL # all"},
}

// FuzzRenderSlurmConf: slurm.conf for any Controller and NodeSets that
// admission accepts. No panic; the same text for the same input; inputs
// untouched. Read as slurmctld reads it (extraconf.Parse), every line the operator writes outside the
// extraConf section stays one line with the key and value written, user
// values (cluster name, NodeSet names and hostnames, partition config)
// cannot continue it onto the next line or start a new one; and, as
// RenderSlurmConf promises, the operator's options of AuthAltParameters,
// AuthInfo and SlurmctldParameters survive whatever extraConf sets, unless
// the file does not parse (slurmctld then refuses it) or includes another
// file.
func FuzzRenderSlurmConf(f *testing.F) {
	for _, s := range renderSeeds {
		f.Add(s.name, s.namespace, s.clusterName, s.extraConf, s.nodeSet1, s.hostname1, s.partition1, s.nodeSet2, s.partition2, s.prolog, s.flags)
	}
	f.Fuzz(func(t *testing.T, name, namespace, clusterName, extraConf, nodeSet1, hostname1, partition1, nodeSet2, partition2, prolog string, flags uint8) {
		// What the API server and the admission webhooks accept.
		if len(validation.IsDNS1123Subdomain(name)) > 0 || len(validation.IsDNS1123Label(namespace)) > 0 {
			return
		}
		w := slinkytesting.MakeController(name, namespace).Keys("keys").ClusterName(clusterName).ExtraConf(extraConf)
		if flags&1 != 0 {
			w = w.Jwks("jwks", "jwks.json")
		}
		if flags&2 != 0 {
			w = w.Metrics()
		}
		c := w.Obj()
		ctx := context.Background()
		if _, err := (&webhook.ControllerValidator{}).ValidateCreate(ctx, c); err != nil {
			return
		}
		var in ConfigInputs
		for i, ns := range []struct{ name, hostname, partition string }{{nodeSet1, hostname1, partition1}, {nodeSet2, "", partition2}} {
			if ns.name == "" {
				continue
			}
			nw := slinkytesting.MakeNodeSet(ns.name, namespace, name).Hostname(ns.hostname)
			if flags&(8<<i) == 0 {
				nw = nw.Partition(ns.partition)
			}
			n := nw.Obj()
			if len(validation.IsDNS1123Subdomain(ns.name)) > 0 {
				return
			}
			if _, err := (&webhook.NodeSetValidator{}).ValidateCreate(ctx, n); err != nil {
				return
			}
			in.NodeSets = append(in.NodeSets, *n)
		}
		if prolog != "" {
			if len(validation.IsConfigMapKey(prolog)) > 0 {
				return
			}
			in.PrologScripts = []string{prolog}
			in.EpilogSlurmctldScripts = []string{prolog}
		}
		if flags&32 != 0 {
			in.Accounting = slinkytesting.MakeAccounting("slurm", namespace).Obj()
		}

		cBefore, inBefore := c.DeepCopy(), deepCopyInputs(in)
		conf := RenderSlurmConf(c, in)
		if again := RenderSlurmConf(c, in); again != conf {
			t.Fatal("RenderSlurmConf is not deterministic")
		}
		if !equality.Semantic.DeepEqual(cBefore, c) || !equality.Semantic.DeepEqual(inBefore, in) {
			t.Fatal("RenderSlurmConf modified its inputs")
		}

		model := parseSlurmConf(conf)
		merged := len(mergeWithExtraConf(mergeableParameters(c), c.Spec.ExtraConf)) > 0
		owned, mergedAt := ownedLines(model.physical, c.Spec.ExtraConf, merged)
		// The merged lines carry the user's options: held to the promise
		// only when the user's own lines parse.
		userClean := readable(extraconf.Parse(c.Spec.ExtraConf + "\n"))
		for i, line := range model.physical {
			if !owned[i] || strings.HasPrefix(line, "#") || (i > mergedAt && !userClean) {
				continue
			}
			l := model.logicalAt(i)
			if l == nil || l.First != i || l.Last != i {
				t.Fatalf("slurm.conf line %d %q is not read as one line by slurmctld: %+v\n%s", i+1, line, l, conf)
			}
			checkOwnedLine(t, conf, strings.TrimSuffix(line, "\n"), l)
		}

		if !model.readable {
			return
		}
		for _, p := range mergeableParameters(c) {
			got, ok := model.values[strings.ToLower(p.Key)]
			if !ok {
				t.Fatalf("%s is not set\n%s", p.Key, conf)
			}
			options := strings.Split(got, ",")
			for _, o := range p.Options {
				if !slices.Contains(options, o) {
					t.Fatalf("slurmctld reads %s=%s: the operator's option %q is lost (extraConf %q)\n%s", p.Key, got, o, c.Spec.ExtraConf, conf)
				}
			}
		}
	})
}

func deepCopyInputs(in ConfigInputs) ConfigInputs {
	out := in
	out.NodeSets = nil
	for i := range in.NodeSets {
		out.NodeSets = append(out.NodeSets, *in.NodeSets[i].DeepCopy())
	}
	out.PrologScripts = slices.Clone(in.PrologScripts)
	out.EpilogSlurmctldScripts = slices.Clone(in.EpilogSlurmctldScripts)
	if in.Accounting != nil {
		out.Accounting = in.Accounting.DeepCopy()
	}
	return out
}

// ownedLines marks the physical lines the renderer writes itself: all but
// the extraConf section (from its "#" separator up to the MERGED CONFIG
// heading, which follows it when there is something to merge).
func ownedLines(physical []string, extraConf string, merged bool) (owned []bool, mergedAt int) {
	owned = make([]bool, len(physical))
	extra := slices.Index(physical, "### EXTRA CONFIG ###\n")
	if extraConf == "" || extra < 0 {
		extra = len(physical) + 1
	}
	mergedAt = len(physical)
	if merged {
		for i := len(physical) - 1; i > extra; i-- {
			if physical[i] == "### MERGED CONFIG ###\n" {
				mergedAt = i
				break
			}
		}
	}
	for i := range physical {
		owned[i] = i < extra-1 || i > mergedAt
	}
	return owned, mergedAt
}

// checkOwnedLine checks that slurmctld reads an operator line's first
// key=value as written; for NodeSet and partition lines also the second
// (Feature=, Nodes=), after which comes the user's partition config.
func checkOwnedLine(t *testing.T, conf, written string, l *extraconf.Line) {
	t.Helper()
	// The operator escapes backslashes and '#' in the values it writes, and
	// quotes a value with white space (only a simple key's can have any).
	plain := unescape(written)
	want := strings.Fields(plain)
	switch {
	case l.LineKey && len(want) > 1:
		want = want[:2]
	case !l.LineKey:
		key, value, _ := strings.Cut(plain, "=")
		if len(value) > 1 && strings.HasPrefix(value, `"`) && strings.HasSuffix(value, `"`) {
			value = value[1 : len(value)-1]
		}
		want = []string{key + "=" + value}
	}
	if len(l.Pairs) < len(want) {
		t.Fatalf("slurmctld reads %q as %q: pairs %q, want %q\n%s", written, l.Text, l.Pairs, want, conf)
	}
	for i, w := range want {
		if l.Pairs[i] != w {
			t.Fatalf("slurmctld reads %q as %q: pair %d is %q, want %q\n%s", written, l.Text, i, l.Pairs[i], w, conf)
		}
	}
	if !l.LineKey && l.Err != nil {
		t.Fatalf("slurmctld cannot parse the operator's line %q (%v)\n%s", written, l.Err, conf)
	}
}

// slurmConf is slurm.conf as slurmctld reads it.
type slurmConf struct {
	physical []string
	lines    []extraconf.Line
	// values are the simple keys' last declarations, by lower-case key.
	values   map[string]string
	readable bool
}

func parseSlurmConf(conf string) *slurmConf {
	physical := strings.SplitAfter(conf, "\n")
	if physical[len(physical)-1] == "" {
		physical = physical[:len(physical)-1]
	}
	lines := extraconf.Parse(conf)
	return &slurmConf{physical: physical, lines: lines, values: extraconf.ParseSimpleParameters(conf), readable: readable(lines)}
}

func (m *slurmConf) logicalAt(physical int) *extraconf.Line {
	for i := range m.lines {
		if m.lines[i].First <= physical && physical <= m.lines[i].Last {
			return &m.lines[i]
		}
	}
	return nil
}

// unescape drops each backslash and keeps the character it escapes.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readable reports whether the daemon can read conf on its own: every
// line parses and none includes another file.
func readable(lines []extraconf.Line) bool {
	for _, l := range lines {
		if l.Err != nil || l.Include {
			return false
		}
	}
	return true
}
