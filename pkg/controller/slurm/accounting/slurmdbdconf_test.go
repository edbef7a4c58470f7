package accounting_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/accounting"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestRenderSlurmdbdConf(t *testing.T) {
	base := func() *slinkytesting.AccountingWrapper {
		return slinkytesting.MakeAccounting("db", "slinky").Keys("keys").Storage("mariadb", 0, "slurm", "db-pass", "password")
	}
	tests := []struct {
		name     string
		acct     *slinkytesting.AccountingWrapper
		password string
		want     string
	}{
		{
			name: "defaults: port 3306, database slurm_acct_db", acct: base(), password: "s3cret",
			want: `#
### GENERAL ###
DbdHost=db-accounting-0
DbdPort=6819
SlurmUser=slurm
#
### PLUGINS & PARAMETERS ###
AuthType=auth/slurm
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=/etc/slurm/jwt.key
AuthInfo=use_client_ids
#
### STORAGE ###
StorageType=accounting_storage/mysql
StorageHost=mariadb
StoragePort=3306
StorageUser=slurm
StorageLoc=slurm_acct_db
StoragePass=s3cret
#
### LOGGING ###
LogFile=/dev/null
`,
		},
		{
			name: "storage settings, JWKS, and extraConf merged with the operator's options",
			acct: slinkytesting.MakeAccounting("acct", "slinky").Keys("keys").Jwks("jwks", "jwks.json").
				Storage("db.example.com", 3307, "", "db-pass", "password").Database("hpc_acct").
				ExtraConf("# site settings\nPurgeJobAfter=12months\nAuthAltParameters=jwt_key=/elsewhere,disable_token_creation\n"),
			password: "s3cret",
			want: `#
### GENERAL ###
DbdHost=acct-accounting-0
DbdPort=6819
SlurmUser=slurm
#
### PLUGINS & PARAMETERS ###
AuthType=auth/slurm
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=/etc/slurm/jwt.key,jwks=/etc/slurm/jwks.json
AuthInfo=use_client_ids
#
### STORAGE ###
StorageType=accounting_storage/mysql
StorageHost=db.example.com
StoragePort=3307
StorageLoc=hpc_acct
StoragePass=s3cret
#
### LOGGING ###
LogFile=/dev/null
#
### EXTRA CONFIG ###
# site settings
PurgeJobAfter=12months
AuthAltParameters=jwt_key=/elsewhere,disable_token_creation
#
### MERGED CONFIG ###
AuthAltParameters=jwt_key=/etc/slurm/jwt.key,jwks=/etc/slurm/jwks.json,disable_token_creation
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.acct.Obj()
			before := a.DeepCopy()
			got, err := accounting.RenderSlurmdbdConf(a, tc.password)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("slurmdbd.conf (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, a); diff != "" {
				t.Errorf("rendering modified the Accounting:\n%s", diff)
			}
		})
	}

	t.Run("an empty password is left out", func(t *testing.T) {
		got, err := accounting.RenderSlurmdbdConf(base().Obj(), "")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got, "StoragePass") {
			t.Errorf("StoragePass written for an empty password:\n%s", got)
		}
	})
	t.Run("a password with a line break is refused", func(t *testing.T) {
		_, err := accounting.RenderSlurmdbdConf(base().Obj(), "pw\nDbdPort=1")
		if err == nil || !strings.Contains(err.Error(), "line break") {
			t.Errorf("err = %v, want a refusal naming the line break", err)
		}
	})
}
