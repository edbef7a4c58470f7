package webhook

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

func sampleLoginSet(t *testing.T) *slinkyv1beta1.LoginSet {
	l := decodeFile[slinkyv1beta1.LoginSet](t, "config/samples/slinky_v1beta1_loginset.yaml")
	l.Namespace = testNamespace
	return &l
}

func TestLoginSetValidator(t *testing.T) {
	ctx := context.Background()
	v := &LoginSetValidator{}
	tests := []struct {
		name   string
		mutate func(*slinkyv1beta1.LoginSet)
		want   string
	}{
		{name: "the sample", mutate: func(*slinkyv1beta1.LoginSet) {}},
		{
			name:   "no Controller",
			mutate: func(l *slinkyv1beta1.LoginSet) { l.Spec.ControllerRef.Name = "" },
			want:   "spec.controllerRef.name: Required value: controllerRef.name must not be empty",
		},
		{
			name:   "no sssd.conf Secret",
			mutate: func(l *slinkyv1beta1.LoginSet) { l.Spec.SssdConfRef = corev1.SecretKeySelector{} },
			want:   "spec.sssdConfRef.name: Required value: sssdConfRef.name must not be empty",
		},
		{
			name:   "no sssd.conf key",
			mutate: func(l *slinkyv1beta1.LoginSet) { l.Spec.SssdConfRef.Key = "" },
			want:   "spec.sssdConfRef.key: Required value",
		},
		{
			name:   "negative replicas",
			mutate: func(l *slinkyv1beta1.LoginSet) { l.Spec.Replicas = ptr.To[int32](-1) },
			want:   "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
		},
		{
			name: "a login port without a number",
			mutate: func(l *slinkyv1beta1.LoginSet) {
				l.Spec.Login.Ports = []corev1.ContainerPort{{Name: "login"}}
			},
			want: "spec.login.ports[0].containerPort: Invalid value: 0: the login port (sshd's) must be between 1 and 65535",
		},
		{
			name: "another port of the login container is the user's business",
			mutate: func(l *slinkyv1beta1.LoginSet) {
				l.Spec.Login.Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := sampleLoginSet(t)
			tc.mutate(l)
			_, err := v.ValidateCreate(ctx, l)
			checkAdmission(t, err, tc.want)
		})
	}

	t.Run("external IPs warn", func(t *testing.T) {
		l := sampleLoginSet(t)
		l.Spec.Service.Spec.ExternalIPs = []string{"10.0.0.1"}
		warnings, err := v.ValidateCreate(ctx, l)
		checkAdmission(t, err, "")
		if len(warnings) != 1 {
			t.Errorf("warnings = %v, want the ExternalIPs warning", warnings)
		}
	})

	t.Run("controllerRef is fixed", func(t *testing.T) {
		l := sampleLoginSet(t)
		l.Spec.ControllerRef.Name = "other"
		_, err := v.ValidateUpdate(ctx, sampleLoginSet(t), l)
		checkAdmission(t, err, `spec.controllerRef: Invalid value: {"name":"other"}: cannot change controllerRef after deployment`)

		l.DeletionTimestamp = &metav1.Time{}
		_, err = v.ValidateUpdate(ctx, sampleLoginSet(t), l)
		checkAdmission(t, err, "")
	})
}

func TestSetupRegistersLoginSetWithSlurm(t *testing.T) {
	for _, tc := range []struct {
		workloads []string
		want      bool
	}{
		{[]string{"slurm"}, true},
		{[]string{"all"}, true},
		{[]string{"raycluster", "trainjob"}, false},
	} {
		mgr := newTestManager(t)
		if err := Setup(mgr, tc.workloads, Options{}); err != nil {
			t.Fatal(err)
		}
		const path = "/validate-slinky-slurm-net-v1beta1-loginset"
		registered := false
		if mux := mgr.GetWebhookServer().WebhookMux(); mux != nil {
			_, pattern := mux.Handler(&http.Request{URL: &url.URL{Path: path}})
			registered = pattern == path
		}
		if registered != tc.want {
			t.Errorf("%v: %s registered = %v, want %v", tc.workloads, path, registered, tc.want)
		}
	}
}
