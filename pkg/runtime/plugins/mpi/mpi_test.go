package mpi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/jobset"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func enforce(t *testing.T, job *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) *plugin.Info {
	t.Helper()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := (MPI{}).EnforceMLPolicy(info, job); err != nil {
		t.Fatal(err)
	}
	if err := (jobset.JobSet{}).IdentifyPodNetwork(info, job); err != nil {
		t.Fatal(err)
	}
	return info
}

func TestCountsAndSlots(t *testing.T) {
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	cases := map[string]struct {
		runtimeSlots      int32
		runLauncherAsNode bool
		job               *trainer.TrainJob
		wantNode          int32
		wantSlots         string
		wantHosts         []string
	}{
		"launcher separate": {
			runtimeSlots: 1, job: trainertesting.MakeTrainJob("j", "default").NumNodes(2).Obj(), wantNode: 2, wantSlots: "1",
			wantHosts: []string{"j-node-0-0.j slots=1", "j-node-0-1.j slots=1"},
		},
		"launcher runs as a node": {
			runtimeSlots: 1, runLauncherAsNode: true, job: trainertesting.MakeTrainJob("j", "default").NumNodes(3).Obj(), wantNode: 2, wantSlots: "1",
			wantHosts: []string{"j-node-0-0.j slots=1", "j-node-0-1.j slots=1", "j-launcher-0-0.j slots=1"},
		},
		"launcher as node with one node still keeps a worker": {
			runtimeSlots: 1, runLauncherAsNode: true, job: trainertesting.MakeTrainJob("j", "default").Obj(), wantNode: 1, wantSlots: "1",
			wantHosts: []string{"j-node-0-0.j slots=1", "j-launcher-0-0.j slots=1"},
		},
		"one slot per GPU when the runtime says 1": {
			runtimeSlots: 1, job: trainertesting.MakeTrainJob("j", "default").ResourcesPerNode(nil, gpus("4")).Obj(), wantNode: 1, wantSlots: "4",
			wantHosts: []string{"j-node-0-0.j slots=4"},
		},
		"runtime slots other than 1 are kept": {
			runtimeSlots: 2, job: trainertesting.MakeTrainJob("j", "default").ResourcesPerNode(nil, gpus("4")).Obj(), wantNode: 1, wantSlots: "2",
			wantHosts: []string{"j-node-0-0.j slots=2"},
		},
		"TrainJob numProcPerNode wins": {
			runtimeSlots: 2, job: trainertesting.MakeTrainJob("j", "default").NumProcPerNode(8).Obj(), wantNode: 1, wantSlots: "8",
			wantHosts: []string{"j-node-0-0.j slots=8"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := trainertesting.MakeRuntimeSpec().NumNodes(1).MPI(tc.runtimeSlots, tc.runLauncherAsNode).ReplicatedJob(trainertesting.MPIJobs("m:1")...).Obj()
			info := enforce(t, tc.job, spec)
			if got := info.FindPodSetByName("node").Count; got != tc.wantNode {
				t.Errorf("node count = %d, want %d", got, tc.wantNode)
			}
			if got := info.FindPodSetByName("launcher").Count; got != 1 {
				t.Errorf("launcher count = %d, want 1", got)
			}
			launcher := info.FindPodSetByName("launcher").FindContainer("node")
			if got := envValue(launcher, OpenMPIEnvDefaultSlots); got != tc.wantSlots {
				t.Errorf("slots env = %q, want %q", got, tc.wantSlots)
			}
			cm := hostfileConfigMap(info, tc.job)
			got := strings.Split(strings.TrimSuffix(cm.Data["hostfile"], "\n"), "\n")
			if diff := cmp.Diff(tc.wantHosts, got); diff != "" {
				t.Errorf("hostfile (-want +got):\n%s", diff)
			}
			if *spec.MLPolicy.MPI.NumProcPerNode != tc.runtimeSlots {
				t.Error("the runtime spec was modified")
			}
		})
	}
}

// Slots are sized as upstream's EnforceMLPolicy does: by the TrainJob's
// resourcesPerNode as written when set, else by the node container of the
// first replicated job named node or labelled trainer
// (runtime.ExtractResourcePerNodeFromRuntime), never by the merge of both.
func TestSlotsSizedByResourcesLikeUpstream(t *testing.T) {
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	cases := map[string]struct {
		runLauncherAsNode bool
		job               *trainer.TrainJob
		wantSlots         string
	}{
		"TrainJob resources without GPUs beat the runtime's GPUs": {
			job:       trainertesting.MakeTrainJob("j", "default").ResourcesPerNode(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}, nil).Obj(),
			wantSlots: "1",
		},
		"without TrainJob resources the first node job counts": {job: trainertesting.MakeTrainJob("j", "default").Obj(), wantSlots: "2"},
		"same with the launcher as a node":                     {runLauncherAsNode: true, job: trainertesting.MakeTrainJob("j", "default").Obj(), wantSlots: "2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := trainertesting.MakeRuntimeSpec().MPI(1, tc.runLauncherAsNode).ReplicatedJob(trainertesting.MPIJobs("m")...).Obj()
			// Workers (job "node", listed first) have 2 GPUs, the launcher 4.
			spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Resources.Limits = gpus("2")
			spec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.Containers[0].Resources.Limits = gpus("4")
			info := enforce(t, tc.job, spec)
			if got := envValue(info.FindPodSetByName("launcher").FindContainer("node"), OpenMPIEnvDefaultSlots); got != tc.wantSlots {
				t.Errorf("slots = %s, want %s", got, tc.wantSlots)
			}
		})
	}
}

func envValue(c *plugin.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return "<unset>"
}

func TestMountsFollowSSHAuthMountPath(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().MPI(1, true).SSHAuthMountPath("/home/mpiuser/.ssh").ReplicatedJob(trainertesting.MPIJobs("m")...).Obj()
	info := enforce(t, trainertesting.MakeTrainJob("j", "default").Obj(), spec)
	for _, ps := range []string{"node", "launcher"} {
		c := info.FindPodSetByName(ps).FindContainer("node")
		if c.VolumeMounts[0].MountPath != "/home/mpiuser/.ssh" {
			t.Errorf("%s mounts = %v", ps, c.VolumeMounts)
		}
	}
	if got := len(info.FindPodSetByName("node").Volumes); got != 1 {
		t.Errorf("workers must not mount the hostfile; volumes = %d", got)
	}
}

func newClient(t *testing.T, objs ...client.Object) client.Client {
	s := apiruntime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func TestBuildGeneratesTheKeyOnlyOnce(t *testing.T) {
	job := trainertesting.MakeTrainJob("j", "default").Obj()
	info := enforce(t, job, trainertesting.MakeRuntimeSpec().MPI(1, false).ReplicatedJob(trainertesting.MPIJobs("m")...).Obj())

	comps, err := (MPI{}).Build(context.Background(), newClient(t), info, job)
	if err != nil {
		t.Fatal(err)
	}
	if len(comps) != 2 || !comps[0].CreateOnly {
		t.Fatalf("want a create-only Secret and a ConfigMap, got %+v", comps)
	}
	secret := comps[0].Object.(*corev1.Secret)
	checkKeyPair(t, secret.Data[corev1.SSHAuthPrivateKey], secret.Data[SSHPublicKey])

	existing := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "j-mpi-ssh-auth", Namespace: "default"}}
	comps, err = (MPI{}).Build(context.Background(), newClient(t, existing), info, job)
	if err != nil {
		t.Fatal(err)
	}
	if len(comps) != 1 || comps[0].Object.GetName() != "j-mpi-hostfile" {
		t.Fatalf("with the Secret present only the hostfile may be built, got %d components", len(comps))
	}
}

// checkKeyPair parses both halves and checks that the public key is the
// private key's, in the authorized_keys format OpenSSH reads.
func checkKeyPair(t *testing.T, privPEM, authorized []byte) {
	t.Helper()
	block, _ := pem.Decode(privPEM)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		t.Fatalf("private key PEM block = %v", block)
	}
	priv, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(authorized))
	if len(fields) != 2 || fields[0] != "ecdsa-sha2-nistp521" || !bytes.HasSuffix(authorized, []byte("\n")) {
		t.Fatalf("authorized key = %q", authorized)
	}
	blob, err := base64.StdEncoding.DecodeString(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	var parts [][]byte
	for len(blob) > 0 {
		n := binary.BigEndian.Uint32(blob)
		parts, blob = append(parts, blob[4:4+n]), blob[4+n:]
	}
	wantPoint := mustECDH(t, &priv.PublicKey)
	if len(parts) != 3 || string(parts[0]) != "ecdsa-sha2-nistp521" || string(parts[1]) != "nistp521" || !bytes.Equal(parts[2], wantPoint) {
		t.Errorf("public key blob does not encode the private key's point")
	}
}

func mustECDH(t *testing.T, pub *ecdsa.PublicKey) []byte {
	k, err := pub.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	return k.Bytes()
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		spec    *trainer.TrainingRuntimeSpec
		job     *trainer.TrainJob
		wantErr bool
	}{
		"complete runtime": {spec: trainertesting.MakeRuntimeSpec().MPI(1, true).ReplicatedJob(trainertesting.MPIJobs("m")...).Obj(),
			job: trainertesting.MakeTrainJob("j", "default").NumNodes(4).Obj()},
		"launcher as node without workers, several nodes": {wantErr: true,
			spec: trainertesting.MakeRuntimeSpec().MPI(1, true).ReplicatedJob(trainertesting.MPIJobs("m")[1]).Obj(),
			job:  trainertesting.MakeTrainJob("j", "default").NumNodes(2).Obj()},
		"launcher as node without workers, one node": {
			spec: trainertesting.MakeRuntimeSpec().MPI(1, true).ReplicatedJob(trainertesting.MPIJobs("m")[1]).Obj(),
			job:  trainertesting.MakeTrainJob("j", "default").NumNodes(1).Obj()},
		"neither launcher nor node": {wantErr: true,
			spec: trainertesting.MakeRuntimeSpec().MPI(1, false).ReplicatedJob(trainertesting.ReplicatedJob("x", "trainer", trainertesting.MakeContainer("node", "m").Obj())).Obj(),
			job:  trainertesting.MakeTrainJob("j", "default").Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info, err := plugin.NewInfo(tc.job, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if errs := (MPI{}).Validate(info, nil, tc.job); (len(errs) > 0) != tc.wantErr {
				t.Errorf("errors = %v, want error %v", errs, tc.wantErr)
			}
		})
	}
}

// The SSH Secret is mounted with Trainer v2.3's modes: the private key
// 0640, the public key and authorized_keys 0644, anything else 0400.
func TestSSHAuthVolumeModesAsTrainer(t *testing.T) {
	v := sshAuthVolume("tj").Secret
	if v.DefaultMode == nil || *v.DefaultMode != 0o400 {
		t.Errorf("defaultMode = %v, want 0400", v.DefaultMode)
	}
	want := map[string]int32{SSHPrivateKeyFile: 0o640, SSHPublicKeyFile: 0o644, SSHAuthorizedKeys: 0o644}
	if len(v.Items) != len(want) {
		t.Fatalf("items %+v", v.Items)
	}
	for _, item := range v.Items {
		if item.Mode == nil || *item.Mode != want[item.Path] {
			t.Errorf("%s mode = %v, want %#o", item.Path, item.Mode, want[item.Path])
		}
	}
}
