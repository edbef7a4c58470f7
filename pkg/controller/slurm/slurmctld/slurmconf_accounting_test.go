package slurmctld

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestWriteAccounting: slurmctld is pointed at slurmdbd only once the
// Accounting exists, at the Service Gantry makes for it (on the port the
// Service listens on), or at an external slurmdbd's own address.
func TestWriteAccounting(t *testing.T) {
	acct := slinkytesting.MakeAccounting("db", "ns")
	tests := []struct {
		name       string
		accounting *slinkyv1beta1.Accounting
		want       []string
	}{
		{"no Accounting (unset or not found)", nil, []string{"AccountingStorageType=accounting_storage/none"}},
		{"the Accounting's Service", acct.Obj(), []string{
			"AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=db-accounting", "AccountingStoragePort=6819"}},
		{"the Service's port when spec.service.port is set", slinkytesting.MakeAccounting("db", "ns").ServicePort(7000).Obj(), []string{
			"AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=db-accounting", "AccountingStoragePort=7000"}},
		{"an external slurmdbd", slinkytesting.MakeAccounting("db", "ns").External("dbd.example.com", 16819).Obj(), []string{
			"AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=dbd.example.com", "AccountingStoragePort=16819"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w confWriter
			writeAccounting(&w, tc.accounting)
			if diff := cmp.Diff(tc.want, w.lines); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// The external slurm.conf (slurmrestd's) says the same.
			c := slinkytesting.MakeController("slurm", "ns").External("ctld", 6817).Accounting("db").Obj()
			if got := RenderExternalSlurmConf(c, tc.accounting); !strings.Contains(got, strings.Join(tc.want, "\n")) {
				t.Errorf("external slurm.conf lacks %q:\n%s", tc.want, got)
			}
		})
	}
}
