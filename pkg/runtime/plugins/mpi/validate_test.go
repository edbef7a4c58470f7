package mpi

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// Trainer v2.3 refuses a TrainJob whose trainer env sets one of the OpenMPI
// variables the MPI plugin writes on the launcher; rendering would replace
// the user's value without a word.
func TestValidateRefusesReservedOpenMPIEnv(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().MPI(1, true).ReplicatedJob(trainertesting.MPIJobs("m")...).Obj()
	cases := map[string]struct {
		env  []corev1.EnvVar
		want []string // one field error each, in this order
	}{
		"no env":               {},
		"other OMPI variables": {env: []corev1.EnvVar{{Name: "OMPI_MCA_btl", Value: "self,tcp"}, {Name: "OMPI_ALLOW_RUN_AS_ROOT", Value: "1"}}},
		"hostfile": {env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: OpenMPIEnvHostFileLocation, Value: "/tmp/h"}},
			want: []string{`spec.trainer.env[1]: Forbidden: OMPI_MCA_orte_default_hostfile is set by the MPI runtime`}},
		"all four": {
			env: []corev1.EnvVar{
				{Name: OpenMPIEnvKeyRSHArgs, Value: "-p 2222"},
				{Name: OpenMPIEnvKeepFQDNHostNames, Value: "false"},
				{Name: OpenMPIEnvDefaultSlots, Value: "8"},
				{Name: OpenMPIEnvHostFileLocation, Value: "/x"},
			},
			want: []string{
				"spec.trainer.env[0]: Forbidden: OMPI_MCA_plm_rsh_args",
				"spec.trainer.env[1]: Forbidden: OMPI_MCA_orte_keep_fqdn_hostnames",
				"spec.trainer.env[2]: Forbidden: OMPI_MCA_orte_set_default_slots",
				"spec.trainer.env[3]: Forbidden: OMPI_MCA_orte_default_hostfile",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := trainertesting.MakeTrainJob("j", "default").NumNodes(2).Obj()
			job.Spec.Trainer.Env = tc.env
			info, err := plugin.NewInfo(job, spec)
			if err != nil {
				t.Fatal(err)
			}
			errs := (MPI{}).Validate(info, nil, job)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors = %v, want %d: %v", errs, len(tc.want), tc.want)
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tc.want[i]) {
					t.Errorf("error %d = %q, want it to contain %q", i, e.Error(), tc.want[i])
				}
			}
		})
	}
}

// The reserved names matter only to the MPI policy: a runtime without it
// leaves OMPI_* variables to the user.
func TestReservedOpenMPIEnvOnlyForMPIRuntimes(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().ReplicatedJob(trainertesting.ReplicatedJob("node", "trainer", trainertesting.MakeContainer("node", "m").Obj())).Obj()
	job := trainertesting.MakeTrainJob("j", "default").Env(OpenMPIEnvDefaultSlots, "8").Obj()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	if errs := (MPI{}).Validate(info, nil, job); len(errs) > 0 {
		t.Errorf("errors = %v, want none without an MPI policy", errs)
	}
}
