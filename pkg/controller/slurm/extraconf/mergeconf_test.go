package extraconf

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSimpleParameters(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"keys are case-insensitive, last wins", "slurmctldparameters=a\nSlurmctldParameters=b\n", map[string]string{"slurmctldparameters": "b"}},
		{"comments and blank lines skipped", "# SlurmctldParameters=x\n\nAuthInfo=y # trailing\n", map[string]string{"authinfo": "y"}},
		{"continuation lines joined", "SchedulerParameters=a,\\\nb\n", map[string]string{"schedulerparameters": "a,b"}},
		{"multi-key lines ignored", "NodeName=n1 CPUs=4\nPartitionName=p Nodes=ALL\n", map[string]string{}},
		{"CRLF tolerated", "AuthInfo=z\r\n", map[string]string{"authinfo": "z"}},
		{"no trailing newline", "AuthInfo=z", map[string]string{"authinfo": "z"}},
		// As Slurm's parse_config.c reads them; the fuzzer found each one
		// read differently before.
		{"an even run of backslashes does not continue", "AuthInfo=x\\\\\nSlurmctldParameters=enable_stepmgr\n",
			map[string]string{"authinfo": `x\`, "slurmctldparameters": "enable_stepmgr"}},
		{"escapes are removed before the key is read", "Slurmctld\\Parameters=enable_stepmgr\n", map[string]string{"slurmctldparameters": "enable_stepmgr"}},
		{"an operator sets a string key", "SlurmctldParameters+=enable_stepmgr\n", map[string]string{"slurmctldparameters": "enable_stepmgr"}},
		{"quoted values keep their spaces", "SlurmctldParameters=\"enable_stepmgr, idle_on_node_suspend\"\n",
			map[string]string{"slurmctldparameters": "enable_stepmgr, idle_on_node_suspend"}},
		{"an escaped # is no comment", "AuthInfo=a\\#b # c\n", map[string]string{"authinfo": "a#b"}},
		{"white space after the continuing backslash", "SchedulerParameters=a,\\ \t\nb\n", map[string]string{"schedulerparameters": "a,b"}},
		{"refused lines and includes left out", "AuthInfo=x y\nInclude /etc/slurm/x.conf\nMinJobAge=2\n", map[string]string{"minjobage": "2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ParseSimpleParameters(tc.conf)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeWithExtraConf(t *testing.T) {
	ops := []Parameter{
		{"AuthAltParameters", []string{"jwt_key=/etc/slurm/jwt.key"}},
		{"SlurmctldParameters", []string{"enable_configless", "reconfig_on_restart"}},
	}
	tests := []struct {
		name  string
		extra string
		want  []Parameter
	}{
		{"nothing set by the user", "MaxJobCount=10\n", nil},
		{"user options appended, duplicates dropped", "SlurmctldParameters=enable_stepmgr,enable_configless\n",
			[]Parameter{{"SlurmctldParameters", []string{"enable_configless", "reconfig_on_restart", "enable_stepmgr"}}}},
		{"operator value of the same option key wins", "AuthAltParameters=jwt_key=/tmp/k,disable_token_creation\n",
			[]Parameter{{"AuthAltParameters", []string{"jwt_key=/etc/slurm/jwt.key", "disable_token_creation"}}}},
		{"key matched case-insensitively", "slurmctldparameters=idle_on_node_suspend\n",
			[]Parameter{{"SlurmctldParameters", []string{"enable_configless", "reconfig_on_restart", "idle_on_node_suspend"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Merge(ops, tc.extra)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if len(ops[1].Options) != 2 {
		t.Errorf("merging modified the operator's options: %v", ops[1].Options)
	}
}

func TestParseLines(t *testing.T) {
	lines := Parse("# head\nNodeName=n[1-2] CPUs=4 \\\n  Feature=\"a b\"\nPartitionName=p Nodes=ALL x\nInclude /etc/slurm/site.conf\n")
	want := []Line{
		{First: 0, Last: 0, Text: ""},
		{First: 1, Last: 2, Text: "NodeName=n[1-2] CPUs=4   Feature=\"a b\"\n", Pairs: []string{"NodeName=n[1-2]", "CPUs=4", "Feature=a b"}, LineKey: true},
		{First: 3, Last: 3, Text: "PartitionName=p Nodes=ALL x\n", Pairs: []string{"PartitionName=p", "Nodes=ALL"}, LineKey: true, Err: errors.New("a word without =")},
		{First: 4, Last: 4, Text: "Include /etc/slurm/site.conf\n", Include: true},
	}
	if diff := cmp.Diff(want, lines, cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFormatValueReadsBack(t *testing.T) {
	for _, v := range []string{"plain", `x\`, `a\\b`, "a#b", "ttl=60 x", `a\ b#c`, "a\tb", `q"uote`} {
		got := ParseSimpleParameters("K=" + FormatValue(v) + "\n")["k"]
		if got != v {
			t.Errorf("FormatValue(%q) = %q, read back as %q", v, FormatValue(v), got)
		}
	}
	for _, s := range []string{`a\`, "a \\ \t", `\\\`, "a \\\x00b \\\\"} {
		if !ContinuesLine(s) {
			t.Errorf("%q continues the line, ContinuesLine says no", s)
		}
	}
	for _, s := range []string{`a\\`, "a", "", `a\ b`} {
		if ContinuesLine(s) {
			t.Errorf("%q does not continue the line, ContinuesLine says yes", s)
		}
	}
}
