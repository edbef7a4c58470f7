package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

func controllerValidator(t *testing.T, objs ...client.Object) *ControllerValidator {
	t.Helper()
	s := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return &ControllerValidator{Reader: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()}
}

func sampleController(t *testing.T) *slinkyv1beta1.Controller {
	c := decodeFile[slinkyv1beta1.Controller](t, "config/samples/slinky_v1beta1_controller.yaml")
	c.Namespace = testNamespace
	return &c
}

func configMap(name string, files ...string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}, Data: map[string]string{}}
	for _, f := range files {
		cm.Data[f] = "# " + f
	}
	return cm
}

func TestControllerValidateCreate(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(*slinkyv1beta1.Controller)
		existing []client.Object
		want     string
		warning  string
	}{
		{name: "sample, Secrets and ConfigMap not created yet", mutate: func(*slinkyv1beta1.Controller) {}},
		{
			name: "sample with its ConfigMap", mutate: func(*slinkyv1beta1.Controller) {},
			existing: []client.Object{configMap("slurm-config-files", "gres.conf")},
		},
		{
			name: "ConfigMap with slurm.conf", mutate: func(*slinkyv1beta1.Controller) {},
			existing: []client.Object{configMap("slurm-config-files", "gres.conf", "slurm.conf")},
			want:     `spec.configFileRefs[0].name: Invalid value: "slurm-config-files": the configFile is reserved for slurm-operator use: slurm.conf`,
		},
		{
			name: "ConfigMap with an unknown file", mutate: func(*slinkyv1beta1.Controller) {},
			existing: []client.Object{configMap("slurm-config-files", "extra.conf")},
			warning:  "the configFile is unknown to Slurm",
		},
		{
			name:   "cluster name too long",
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.ClusterName = strings.Repeat("c", 41) },
			want:   "spec.clusterName: Invalid value: \"" + strings.Repeat("c", 41) + "\": ClusterName exceeds 40 characters (41)",
		},
		{
			name:   "derived cluster name too long",
			mutate: func(c *slinkyv1beta1.Controller) { c.Name = strings.Repeat("n", 40) },
			want:   "ClusterName exceeds 40 characters (48); when clusterName is empty it is <namespace>_<name>",
		},
		{
			name:   "cluster name with a space",
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.ClusterName = "my cluster" },
			want:   `spec.clusterName: Invalid value: "my cluster": must consist of alphanumeric characters`,
		},
		{
			name: "external IPs", mutate: func(c *slinkyv1beta1.Controller) {
				c.Spec.Service.Spec.ExternalIPs = []string{"10.0.0.1"}
			},
			warning: "ExternalIPs may not be set for controller service",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := sampleController(t)
			tc.mutate(c)
			warnings, err := controllerValidator(t, tc.existing...).ValidateCreate(context.Background(), c)
			checkAdmission(t, err, tc.want)
			if tc.warning != "" && !strings.Contains(strings.Join(warnings, "\n"), tc.warning) {
				t.Errorf("warnings %v lack %q", warnings, tc.warning)
			}
		})
	}
}

func TestControllerValidateUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*slinkyv1beta1.Controller)
		want   string
	}{
		{name: "extraConf", mutate: func(c *slinkyv1beta1.Controller) { c.Spec.ExtraConf = "SlurmctldDebug=debug" }},
		{name: "same key, other Secret key", mutate: func(c *slinkyv1beta1.Controller) { c.Spec.SlurmKeyRef.Key = "other.key" }},
		{
			name:   "clusterName",
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.ClusterName = "renamed" },
			want:   `spec.clusterName: Invalid value: "renamed": cannot change ClusterName after deployment`,
		},
		{
			name:   "clusterName set to the derived value",
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.ClusterName = "default_slurm" },
		},
		{
			name:   "slurm key Secret",
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.SlurmKeyRef.Name = "other" },
			want:   `spec.slurmKeyRef.name: Invalid value: "other": cannot change SlurmKeyRef after deployment`,
		},
		{
			name: "jwt key moved to the deprecated field",
			mutate: func(c *slinkyv1beta1.Controller) {
				c.Spec.JwtHs256KeyRef, c.Spec.JwtKeyRef = c.Spec.JwtKeyRef, nil
			},
		},
		{
			name:   "jwt key Secret",
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.JwtKeyRef.Name = "other" },
			want:   "spec.jwtKeyRef: Forbidden: the value of JwtKeyRef or JwtHs256KeyRef cannot be modified after deployment",
		},
		{
			name:   "persistence off",
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.Persistence.Enabled = ptr.To(false) },
			want:   "spec.persistence.enabled: Invalid value: false: cannot change persistence.enabled after deployment",
		},
		{
			name:   "existing claim for the claim template",
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.Persistence.ExistingClaim = "state" },
			want:   `spec.persistence.existingClaim: Invalid value: "state": cannot switch between persistence.existingClaim and a claim Gantry makes after deployment`,
		},
		{
			name: "being deleted",
			mutate: func(c *slinkyv1beta1.Controller) {
				c.Spec.ClusterName = "renamed"
				c.DeletionTimestamp = ptr.To(metav1.Now())
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldC, newC := sampleController(t), sampleController(t)
			tc.mutate(newC)
			_, err := controllerValidator(t).ValidateUpdate(context.Background(), oldC, newC)
			checkAdmission(t, err, tc.want)
		})
	}
}

// TestControllerValidateUpdateFromStored: updates of Controllers stored
// before (by Slinky, whose webhook lets them be) are judged as Slinky
// v1.2.1 judges them (internal/webhook/controller_webhook.go).
func TestControllerValidateUpdateFromStored(t *testing.T) {
	tests := []struct {
		name   string
		stored func(*slinkyv1beta1.Controller)
		mutate func(*slinkyv1beta1.Controller)
		want   string
	}{
		{
			// Slinky checks no ClusterName format: a label added to a
			// Controller it admitted is admitted.
			name:   "a label on a Controller whose clusterName Gantry would refuse",
			stored: func(c *slinkyv1beta1.Controller) { c.Spec.ClusterName = "my cluster" },
			mutate: func(c *slinkyv1beta1.Controller) { c.Labels = map[string]string{"team": "hpc"} },
		},
		{
			// A volume of the pod template, which a StatefulSet update
			// changes; Slinky refuses only persistence.enabled.
			name:   "one existing claim for another",
			stored: func(c *slinkyv1beta1.Controller) { c.Spec.Persistence.ExistingClaim = "state" },
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.Persistence.ExistingClaim = "state-copy" },
		},
		{
			// The claim template is immutable in a StatefulSet.
			name:   "the claim template for an existing claim",
			stored: func(c *slinkyv1beta1.Controller) { c.Spec.Persistence.ExistingClaim = "state" },
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.Persistence.ExistingClaim = "" },
			want:   `spec.persistence.existingClaim: Invalid value: "": cannot switch between persistence.existingClaim and a claim Gantry makes after deployment`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldC := sampleController(t)
			tc.stored(oldC)
			newC := oldC.DeepCopy()
			tc.mutate(newC)
			_, err := controllerValidator(t).ValidateUpdate(context.Background(), oldC, newC)
			checkAdmission(t, err, tc.want)
		})
	}
}

func sampleNodeSet(t *testing.T) *slinkyv1beta1.NodeSet {
	n := decodeFile[slinkyv1beta1.NodeSet](t, "config/samples/slinky_v1beta1_nodeset.yaml")
	n.Namespace = testNamespace
	return &n
}

func TestNodeSetValidator(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*slinkyv1beta1.NodeSet)
		want   string
	}{
		{name: "sample", mutate: func(*slinkyv1beta1.NodeSet) {}},
		{
			name:   "no controller",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.ControllerRef.Name = "" },
			want:   "spec.controllerRef.name: Required value: controllerRef.name must not be empty",
		},
		{
			name:   "negative replicas",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](-1) },
			want:   "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
		},
		{
			name: "zero maxUnavailable",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			},
			want: "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: must be greater than 0",
		},
		{
			name: "0% maxUnavailable",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("0%"))
			},
			want: `spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "0%": must be a percentage between 1% and 100%`,
		},
		{
			name: "maxUnavailable not a percentage",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("half"))
			},
			want: `spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "half": a valid percent string must be`,
		},
		{
			name: "25% maxUnavailable",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
			},
		},
		{
			name:   "ssh without sssd.conf",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.Ssh.Enabled = true },
			want:   "spec.ssh.sssdConfRef.name: Required value: must be set when ssh is enabled",
		},
		{
			name:   "hostname",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.Template.Spec.Hostname = "Slinky_" },
			want:   `spec.template.spec.hostname: Invalid value: "Slinky_": a lowercase RFC 1123 subdomain`,
		},
		{
			name:   "extraConf item without a value",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.ExtraConf = "Features=a Weight" },
			want:   `spec.extraConf: Invalid value: "Features=a Weight": malformed item "Weight": expected Key=Value`,
		},
		{
			name:   "extraConf with a quote",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.ExtraConf = "Features='a'" },
			want:   "spec.extraConf: Invalid value: \"Features='a'\": must not contain a single quote (')",
		},
		{
			name:   "partition config over two lines",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.Partition.Config = "State=UP\nNodeName=evil" },
			want:   `spec.partition.config: Invalid value: "State=UP\nNodeName=evil": must be a single line`,
		},
		{
			// The prefix rule of NameIsDNSSubdomain alone lets it pass.
			name:   "hostname of a space and a dash",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.Template.Spec.Hostname = " -" },
			want:   `spec.template.spec.hostname: Invalid value: " -"`,
		},
		{
			name:   "hostname prefix ending in a dash",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.Template.Spec.Hostname = "gpu-" },
		},
		{
			name:   "partition config continuing onto the next line",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.Partition.Config = `MaxTime=1 \ ` },
			want:   `spec.partition.config: Invalid value: "MaxTime=1 \\ ": must not end in an odd number of backslashes`,
		},
		{
			name:   "partition config ending in an escaped backslash",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.Partition.Config = `Default=YES MaxTime=UNLIMITED \\` },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := sampleNodeSet(t)
			tc.mutate(n)
			_, err := (&NodeSetValidator{}).ValidateCreate(context.Background(), n)
			checkAdmission(t, err, tc.want)
		})
	}
}

func TestNodeSetValidateUpdate(t *testing.T) {
	oldN := sampleNodeSet(t)
	newN := sampleNodeSet(t)
	newN.Spec.Replicas = ptr.To[int32](5)
	_, err := (&NodeSetValidator{}).ValidateUpdate(context.Background(), oldN, newN)
	checkAdmission(t, err, "")

	newN.Spec.ControllerRef.Name = "other"
	_, err = (&NodeSetValidator{}).ValidateUpdate(context.Background(), oldN, newN)
	checkAdmission(t, err, `spec.controllerRef: Invalid value: {"name":"other"}: cannot change controllerRef after deployment`)

	newN = sampleNodeSet(t)
	newN.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}}}
	_, err = (&NodeSetValidator{}).ValidateUpdate(context.Background(), oldN, newN)
	checkAdmission(t, err, "spec.volumeClaimTemplates: Forbidden: cannot change volumeClaimTemplates after deployment")
}

func TestRestApiValidator(t *testing.T) {
	sample := func() *slinkyv1beta1.RestApi {
		r := decodeFile[slinkyv1beta1.RestApi](t, "config/samples/slinky_v1beta1_restapi.yaml")
		r.Namespace = testNamespace
		return &r
	}
	v := &RestApiValidator{}
	_, err := v.ValidateCreate(context.Background(), sample())
	checkAdmission(t, err, "")

	r := sample()
	r.Spec.ControllerRef.Name = ""
	_, err = v.ValidateCreate(context.Background(), r)
	checkAdmission(t, err, "spec.controllerRef.name: Required value: controllerRef.name must not be empty")

	r = sample()
	r.Spec.Replicas = ptr.To[int32](-2)
	_, err = v.ValidateCreate(context.Background(), r)
	checkAdmission(t, err, "spec.replicas: Invalid value: -2: must be greater than or equal to 0")

	r = sample()
	r.Spec.Service.Spec.ExternalIPs = []string{"10.0.0.1"}
	warnings, err := v.ValidateCreate(context.Background(), r)
	checkAdmission(t, err, "")
	if len(warnings) != 1 {
		t.Errorf("warnings = %v, want the ExternalIPs warning", warnings)
	}

	r = sample()
	r.Spec.ControllerRef.Name = "other"
	_, err = v.ValidateUpdate(context.Background(), sample(), r)
	checkAdmission(t, err, `spec.controllerRef: Invalid value: {"name":"other"}: cannot change controllerRef after deployment`)
}

// The Slinky fields Gantry does not implement yet are refused with a message
// naming the field; their defaults, and what Slinky's Helm chart and Go
// types send when they are unset, are admitted.
func TestNodeSetSlinkyFieldsGantryLacks(t *testing.T) {
	sssd := corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sssd"}, Key: "sssd.conf"}
	startTime := metav1.NewTime(testTime)
	tests := []struct {
		name    string
		mutate  func(*slinkyv1beta1.NodeSet)
		want    string
		warning string
	}{
		{
			name: "server defaults of every field",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.PinToNode = false
				n.Spec.PruneSlurmNodeRecords = slinkyv1beta1.NodeSetPruneNodeRecordTypeNever
				n.Spec.OversubscribeNode = false
				n.Spec.TaintKubeNodes = false
				n.Spec.Ssh.Enabled = false
				n.Spec.ScalingMode = slinkyv1beta1.ScalingModeStatefulset
			},
		},
		{
			name: "Slinky chart's scheduledUpdate: {} after defaulting",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.ScheduledUpdate.Duration = metav1.Duration{Duration: 30 * time.Minute}
			},
		},
		{
			name: "empty scheduledUpdate from Slinky's Go types",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.ScheduledUpdate = slinkyv1beta1.ScheduledUpdateNodeSetStrategy{Flags: []string{}}
			},
		},
		{name: "oversubscribeNode", mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.OversubscribeNode = true }},
		{
			name: "ssh settings without ssh",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.Ssh = slinkyv1beta1.NodeSetSsh{ExtraSshdConfig: "X11Forwarding no", SssdConfRef: sssd}
			},
		},
		{
			name:   "pinToNode",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.PinToNode = true },
			want:   "spec.pinToNode: Invalid value: true: not supported by Gantry yet: pods are not pinned to the Kubernetes node they first ran on; set pinToNode to false",
		},
		{
			name: "pruneSlurmNodeRecords NodeNotFound is admitted",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.ScalingMode = slinkyv1beta1.ScalingModeDaemonset
				n.Spec.PruneSlurmNodeRecords = slinkyv1beta1.NodeSetPruneNodeRecordTypeNodeNotFound
			},
		},
		{
			name: "ScheduledUpdate strategy",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.Type = slinkyv1beta1.ScheduledUpdateNodeSetStrategyType
				n.Spec.UpdateStrategy.ScheduledUpdate = slinkyv1beta1.ScheduledUpdateNodeSetStrategy{
					StartTime: startTime, Duration: metav1.Duration{Duration: time.Hour},
				}
			},
			want: `spec.updateStrategy.type: Invalid value: "ScheduledUpdate": not supported by Gantry yet: no Slurm maintenance reservation is made for updates; use RollingUpdate or OnDelete`,
		},
		{
			name: "scheduledUpdate startTime with RollingUpdate",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.ScheduledUpdate.StartTime = startTime
			},
			want: "spec.updateStrategy.scheduledUpdate: Forbidden: not supported by Gantry yet: it configures the ScheduledUpdate strategy",
		},
		{
			name: "scheduledUpdate flags",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.ScheduledUpdate.Flags = []string{"IGNORE_JOBS"}
			},
			want: "spec.updateStrategy.scheduledUpdate: Forbidden: not supported by Gantry yet",
		},
		{
			name: "scheduledUpdate duration other than the default",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.UpdateStrategy.ScheduledUpdate.Duration = metav1.Duration{Duration: time.Hour}
			},
			want: "spec.updateStrategy.scheduledUpdate: Forbidden: not supported by Gantry yet",
		},
		{
			name: "ssh with its sssd.conf is admitted",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.Ssh = slinkyv1beta1.NodeSetSsh{Enabled: true, SssdConfRef: sssd, ExtraSshdConfig: "X11Forwarding no"}
			},
		},
		{
			name:   "taintKubeNodes",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.TaintKubeNodes = true },
			want:   "spec.taintKubeNodes: Invalid value: true: removed in Slinky v1.2 because anyone allowed to create a NodeSet could taint every node NoExecute; Gantry does not support it",
		},
		{
			name:   "scalingMode DaemonSet is admitted without a warning",
			mutate: func(n *slinkyv1beta1.NodeSet) { n.Spec.ScalingMode = slinkyv1beta1.ScalingModeDaemonset },
		},
		{
			name: "pinToNode in DaemonSet mode is admitted (ignored, as by Slinky)",
			mutate: func(n *slinkyv1beta1.NodeSet) {
				n.Spec.ScalingMode = slinkyv1beta1.ScalingModeDaemonset
				n.Spec.PinToNode = true
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := sampleNodeSet(t)
			tc.mutate(n)
			warnings, err := (&NodeSetValidator{}).ValidateCreate(context.Background(), n)
			checkAdmission(t, err, tc.want)
			checkWarning(t, warnings, tc.warning)

			// The same change made to an existing NodeSet is refused too.
			oldN := sampleNodeSet(t)
			_, err = (&NodeSetValidator{}).ValidateUpdate(context.Background(), oldN, n)
			checkAdmission(t, err, tc.want)
		})
	}
}

// A NodeSet stored before (by Slinky, or an older Gantry) keeps a field
// Gantry refuses: its metadata can still change — Gantry removes Slinky's
// finalizer — but a spec edit must drop the field first.
func TestNodeSetUpdateOfStoredUnsupportedField(t *testing.T) {
	stored := sampleNodeSet(t)
	stored.Spec.PinToNode = true

	relabelled := stored.DeepCopy()
	relabelled.Labels = map[string]string{"team": "hpc"}
	relabelled.Finalizers = nil
	_, err := (&NodeSetValidator{}).ValidateUpdate(context.Background(), stored, relabelled)
	checkAdmission(t, err, "")

	scaled := stored.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](4)
	_, err = (&NodeSetValidator{}).ValidateUpdate(context.Background(), stored, scaled)
	checkAdmission(t, err, "spec.pinToNode: Invalid value: true: not supported by Gantry yet")

	scaled.Spec.PinToNode = false
	_, err = (&NodeSetValidator{}).ValidateUpdate(context.Background(), stored, scaled)
	checkAdmission(t, err, "")
}

func TestControllerSlinkyFieldsGantryLacks(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*slinkyv1beta1.Controller)
		want   string
	}{
		{
			name: "Slinky chart's defaults",
			mutate: func(c *slinkyv1beta1.Controller) {
				c.Spec.HighAvailability = slinkyv1beta1.ControllerHighAvailability{Enabled: false, Backups: ptr.To[int32](1)}
				c.Spec.InplaceReconfigure = false
			},
		},
		{
			name: "backups without ha",
			mutate: func(c *slinkyv1beta1.Controller) {
				c.Spec.HighAvailability = slinkyv1beta1.ControllerHighAvailability{Backups: ptr.To[int32](2)}
			},
		},
		{
			name: "ha",
			mutate: func(c *slinkyv1beta1.Controller) {
				c.Spec.HighAvailability = slinkyv1beta1.ControllerHighAvailability{Enabled: true, Backups: ptr.To[int32](1)}
				c.Spec.Persistence.ExistingClaim = "slurmctld-state"
			},
			want: "spec.ha.enabled: Invalid value: true: not supported by Gantry yet: Gantry runs one slurmctld without backup controllers",
		},
		{
			name:   "inplaceReconfigure is supported",
			mutate: func(c *slinkyv1beta1.Controller) { c.Spec.InplaceReconfigure = true },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := sampleController(t)
			tc.mutate(c)
			_, err := controllerValidator(t).ValidateCreate(context.Background(), c)
			checkAdmission(t, err, tc.want)

			oldC := sampleController(t)
			oldC.Spec.Persistence.ExistingClaim = c.Spec.Persistence.ExistingClaim
			_, err = controllerValidator(t).ValidateUpdate(context.Background(), oldC, c)
			checkAdmission(t, err, tc.want)
		})
	}

	// A Controller stored with ha keeps its metadata editable.
	stored := sampleController(t)
	stored.Spec.HighAvailability.Enabled = true
	stored.Spec.Persistence.ExistingClaim = "slurmctld-state"
	relabelled := stored.DeepCopy()
	relabelled.Labels = map[string]string{"team": "hpc"}
	_, err := controllerValidator(t).ValidateUpdate(context.Background(), stored, relabelled)
	checkAdmission(t, err, "")
}

func checkWarning(t *testing.T, warnings []string, want string) {
	t.Helper()
	got := strings.Join(warnings, "\n")
	if want == "" && got != "" {
		t.Errorf("unexpected warnings %v", warnings)
	}
	if want != "" && !strings.Contains(got, want) {
		t.Errorf("warnings %v lack %q", warnings, want)
	}
}
