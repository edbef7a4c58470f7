package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

func sampleAccounting(t *testing.T) *slinkyv1beta1.Accounting {
	a := decodeFile[slinkyv1beta1.Accounting](t, "config/samples/slinky_v1beta1_accounting.yaml")
	a.Namespace = testNamespace
	return &a
}

func TestAccountingValidateCreate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*slinkyv1beta1.Accounting)
		want    []string
		warning string
	}{
		{name: "the sample is admitted", mutate: func(*slinkyv1beta1.Accounting) {}},
		{name: "no database host", mutate: func(a *slinkyv1beta1.Accounting) { a.Spec.StorageConfig.Host = "" },
			want: []string{"spec.storageConfig.host: Required value"}},
		{name: "no storageConfig at all", mutate: func(a *slinkyv1beta1.Accounting) { a.Spec.StorageConfig = slinkyv1beta1.StorageConfig{} },
			want: []string{"spec.storageConfig.host: Required value", "spec.storageConfig.passwordKeyRef: Required value"}},
		{name: "no slurm key", mutate: func(a *slinkyv1beta1.Accounting) { a.Spec.SlurmKeyRef = nil },
			want: []string{"spec.slurmKeyRef: Required value"}},
		{name: "the deprecated jwt key field is enough", mutate: func(a *slinkyv1beta1.Accounting) {
			a.Spec.JwtHs256KeyRef, a.Spec.JwtKeyRef = a.Spec.JwtKeyRef, nil
		}},
		{name: "DbdPort in extraConf cannot be honoured", mutate: func(a *slinkyv1beta1.Accounting) {
			a.Spec.ExtraConf = "PurgeJobAfter=1month\ndbdport=7000\nDbdHost=elsewhere\n"
		}, want: []string{
			"spec.extraConf: Invalid value: \"DbdHost=…\": not supported by Gantry: DbdHost is set by the operator (it must be the pod's host name",
			"spec.extraConf: Invalid value: \"dbdport=…\": not supported by Gantry: dbdport is set by the operator (the Service, the container port and the readiness probe use 6819",
		}},
		{name: "hostNetwork would give slurmdbd the node's host name", mutate: func(a *slinkyv1beta1.Accounting) {
			a.Spec.Template.Spec.HostNetwork = true
		}, want: []string{"spec.template.spec.hostNetwork: Invalid value: true: not supported"}},
		{name: "an external slurmdbd needs only its address", mutate: func(a *slinkyv1beta1.Accounting) {
			*a = slinkyv1beta1.Accounting{ObjectMeta: a.ObjectMeta}
			a.Spec.External = true
			a.Spec.ExternalConfig = &slinkyv1beta1.ExternalConfig{Host: "dbd.example.com", Port: 6819}
		}},
		{name: "an external slurmdbd without a port", mutate: func(a *slinkyv1beta1.Accounting) {
			a.Spec.External = true
			a.Spec.ExternalConfig = &slinkyv1beta1.ExternalConfig{Host: "dbd.example.com"}
		}, want: []string{"spec.externalConfig.port: Invalid value: 0"}, warning: "spec.extraConf is not used when external is true"},
		{name: "external IPs draw a warning", mutate: func(a *slinkyv1beta1.Accounting) {
			a.Spec.Service.Spec.ExternalIPs = []string{"10.0.0.1"}
		}, warning: "ExternalIPs may not be set for accounting service"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := sampleAccounting(t)
			tc.mutate(a)
			warnings, err := (&AccountingValidator{}).ValidateCreate(context.Background(), a)
			checkAdmissionAll(t, err, tc.want)
			if tc.warning != "" && !strings.Contains(strings.Join(warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q lack %q", warnings, tc.warning)
			}
			if tc.warning == "" && len(warnings) > 0 {
				t.Errorf("unexpected warnings %q", warnings)
			}
		})
	}
}

func TestAccountingValidateUpdate(t *testing.T) {
	old := sampleAccounting(t)
	old.Spec.ExtraConf = "DbdPort=7000\n" // admitted before Gantry took over

	t.Run("a metadata-only edit of an object with an unsupported field is admitted", func(t *testing.T) {
		updated := old.DeepCopy()
		updated.Labels = map[string]string{"team": "hpc"}
		_, err := (&AccountingValidator{}).ValidateUpdate(context.Background(), old, updated)
		checkAdmissionAll(t, err, nil)
	})
	t.Run("a spec edit must drop the unsupported field", func(t *testing.T) {
		updated := old.DeepCopy()
		updated.Spec.StorageConfig.Database = "other"
		_, err := (&AccountingValidator{}).ValidateUpdate(context.Background(), old, updated)
		checkAdmissionAll(t, err, []string{"spec.extraConf: Invalid value: \"DbdPort=…\""})
	})
	t.Run("the jwt key cannot change", func(t *testing.T) {
		base := sampleAccounting(t)
		updated := base.DeepCopy()
		updated.Spec.JwtKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "jwt.key"}
		_, err := (&AccountingValidator{}).ValidateUpdate(context.Background(), base, updated)
		checkAdmissionAll(t, err, []string{"spec.jwtKeyRef: Forbidden: the value of JwtKeyRef or JwtHs256KeyRef cannot be modified after deployment"})
	})
}

// checkAdmissionAll is checkAdmission for a refusal that must name each
// of want.
func checkAdmissionAll(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		checkAdmission(t, err, "")
		return
	}
	for _, w := range want {
		checkAdmission(t, err, w)
	}
}
