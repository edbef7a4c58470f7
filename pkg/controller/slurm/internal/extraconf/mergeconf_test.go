package extraconf

import (
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
