package slurmctld

import (
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/extraconf"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
)

// parameter is a slurm.conf key whose value is a comma-separated option list.
type parameter = extraconf.Parameter

// mergeableParameters are the option lists the operator needs set and a user
// may want to extend through extraConf.
func mergeableParameters(c *slinkyv1beta1.Controller) []parameter {
	authAlt := []string{slinky.JwtAuthAltParameters}
	if c.Spec.JwksKeyRef != nil {
		authAlt = append(authAlt, slinky.JwksAuthAltParameters)
	}
	return []parameter{
		{Key: "AuthAltParameters", Options: authAlt},
		{Key: "AuthInfo", Options: []string{slinky.AuthInfo}},
		{Key: "SlurmctldParameters", Options: []string{"enable_configless", "reconfig_on_restart"}},
	}
}

// mergeWithExtraConf is shared with slurmdbd.conf; see extraconf.Merge.
var mergeWithExtraConf = extraconf.Merge
