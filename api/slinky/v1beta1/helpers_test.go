package v1beta1_test

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

func TestControllerClusterName(t *testing.T) {
	tests := []struct {
		name        string
		clusterName string
		want        string
	}{
		{name: "explicit name wins", clusterName: "hpc", want: "hpc"},
		{name: "defaults to namespace_name", want: "research_slurm"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &slinkyv1beta1.Controller{
				ObjectMeta: metav1.ObjectMeta{Namespace: "research", Name: "slurm"},
				Spec:       slinkyv1beta1.ControllerSpec{ClusterName: tc.clusterName},
			}
			if got := c.ClusterName(); got != tc.want {
				t.Errorf("ClusterName() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEffectiveJwtKeyRef(t *testing.T) {
	current := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "jwt"}, Key: "jwt.key"}
	deprecated := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hs256"}, Key: "jwt_hs256.key"}
	tests := []struct {
		name       string
		jwt, hs256 *corev1.SecretKeySelector
		want       *corev1.SecretKeySelector
	}{
		{name: "jwtKeyRef only", jwt: current, want: current},
		{name: "deprecated jwtHs256KeyRef only", hs256: deprecated, want: deprecated},
		{name: "jwtKeyRef wins over the deprecated field", jwt: current, hs256: deprecated, want: current},
		{name: "neither", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := slinkyv1beta1.ControllerSpec{JwtKeyRef: tc.jwt, JwtHs256KeyRef: tc.hs256}
			if got := spec.EffectiveJwtKeyRef(); got != tc.want {
				t.Errorf("EffectiveJwtKeyRef() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOptionalBooleansDefaultToTrue(t *testing.T) {
	tests := []struct {
		name  string
		value *bool
		want  bool
	}{
		{name: "unset", value: nil, want: true},
		{name: "true", value: ptr.To(true), want: true},
		{name: "false", value: ptr.To(false), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			persistence := slinkyv1beta1.ControllerPersistence{Enabled: tc.value}
			if got := persistence.IsEnabled(); got != tc.want {
				t.Errorf("ControllerPersistence.IsEnabled() = %v, want %v", got, tc.want)
			}
			spec := slinkyv1beta1.NodeSetSpec{WorkloadDisruptionProtection: tc.value}
			if got := spec.WorkloadDisruptionProtectionEnabled(); got != tc.want {
				t.Errorf("WorkloadDisruptionProtectionEnabled() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeSetControllerKey(t *testing.T) {
	tests := []struct {
		name string
		ref  slinkyv1beta1.ObjectReference
		want types.NamespacedName
	}{
		{name: "empty namespace means the NodeSet's", ref: slinkyv1beta1.ObjectReference{Name: "slurm"}, want: types.NamespacedName{Namespace: "hpc", Name: "slurm"}},
		{name: "explicit namespace is kept", ref: slinkyv1beta1.ObjectReference{Namespace: "other", Name: "slurm"}, want: types.NamespacedName{Namespace: "other", Name: "slurm"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := &slinkyv1beta1.NodeSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: "hpc", Name: "workers"},
				Spec:       slinkyv1beta1.NodeSetSpec{ControllerRef: tc.ref},
			}
			if got := ns.ControllerKey(); got != tc.want {
				t.Errorf("ControllerKey() = %v, want %v", got, tc.want)
			}
		})
	}
}

// The wrappers must serialise as the bare core/v1 object, whether the
// enclosing struct is marshalled by value or by pointer, and survive a round trip.
func TestWrappersSerialiseAsBareCoreObjects(t *testing.T) {
	spec := slinkyv1beta1.NodeSetSpec{
		Slurmd: slinkyv1beta1.ContainerWrapper{Container: corev1.Container{Name: "slurmd", Image: "slurmd:1"}},
		Template: slinkyv1beta1.PodTemplate{
			Spec: slinkyv1beta1.PodSpecWrapper{PodSpec: corev1.PodSpec{Hostname: "w-"}},
		},
	}
	tests := []struct {
		name  string
		input any
	}{
		{name: "by value", input: spec},
		{name: "by pointer", input: &spec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.input)
			if err != nil {
				t.Fatal(err)
			}
			var generic map[string]any
			if err := json.Unmarshal(raw, &generic); err != nil {
				t.Fatal(err)
			}
			slurmd, _ := generic["slurmd"].(map[string]any)
			if slurmd["image"] != "slurmd:1" {
				t.Errorf("slurmd serialised as %v, want a bare container with image slurmd:1", generic["slurmd"])
			}
			var back slinkyv1beta1.NodeSetSpec
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			if back.Slurmd.Image != "slurmd:1" || back.Template.Spec.Hostname != "w-" {
				t.Errorf("round trip lost data: slurmd image %q, hostname %q", back.Slurmd.Image, back.Template.Spec.Hostname)
			}
		})
	}
}

// A zero spec must not emit the optional sub-objects: the API server's
// defaulting and the CEL "has(...)" rules depend on absent meaning unset.
func TestZeroSpecOmitsOptionalObjects(t *testing.T) {
	raw, err := json.Marshal(slinkyv1beta1.ControllerSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(raw); got != "{}" {
		t.Errorf("zero ControllerSpec serialised as %s, want {}", got)
	}
}
