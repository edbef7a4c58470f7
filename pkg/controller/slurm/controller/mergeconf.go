package controller

import (
	"strings"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
)

// parameter is a slurm.conf key whose value is a comma-separated option list.
type parameter struct {
	key     string
	options []string
}

// mergeableParameters are the option lists the operator needs set and a user
// may want to extend through extraConf.
func mergeableParameters(c *slinkyv1beta1.Controller) []parameter {
	authAlt := []string{common.JwtAuthAltParameters}
	if c.Spec.JwksKeyRef != nil {
		authAlt = append(authAlt, common.JwksAuthAltParameters)
	}
	return []parameter{
		{"AuthAltParameters", authAlt},
		{"AuthInfo", []string{common.AuthInfo}},
		{"SlurmctldParameters", []string{"enable_configless", "reconfig_on_restart"}},
	}
}

// mergeWithExtraConf returns, for each parameter extraConf also sets, the
// operator's options followed by the user's. A user option naming the same
// option key as an operator option is dropped: the operator's value is what
// the mounted files and pods are built for (e.g. the jwt_key path).
func mergeWithExtraConf(ops []parameter, extraConf string) []parameter {
	user := parseSimpleParameters(extraConf)
	var out []parameter
	for _, p := range ops {
		value, ok := user[strings.ToLower(p.key)]
		if !ok {
			continue
		}
		options := append([]string(nil), p.options...)
		seen := map[string]bool{}
		for _, o := range options {
			seen[optionKey(o)] = true
		}
		for _, o := range strings.Split(value, ",") {
			if o = strings.TrimSpace(o); o == "" || seen[optionKey(o)] {
				continue
			}
			seen[optionKey(o)] = true
			options = append(options, o)
		}
		out = append(out, parameter{p.key, options})
	}
	return out
}

// parseSimpleParameters reads the "Key=value" lines of a slurm.conf snippet
// (case-insensitive keys, the last declaration wins), joining lines continued
// with a backslash and skipping comments and lines that declare several
// keys, such as NodeName= or PartitionName= lines.
func parseSimpleParameters(conf string) map[string]string {
	out := map[string]string{}
	var logical strings.Builder
	flush := func() {
		line := strings.TrimSpace(logical.String())
		logical.Reset()
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" || value == "" || strings.ContainsAny(value, " \t") {
			return
		}
		out[strings.ToLower(key)] = value
	}
	for _, line := range strings.Split(conf, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimRight(line, " \t")
		if before, ok := strings.CutSuffix(line, `\`); ok {
			logical.WriteString(before)
			continue
		}
		logical.WriteString(line)
		flush()
	}
	flush()
	return out
}

func optionKey(option string) string {
	k, _, _ := strings.Cut(option, "=")
	return strings.ToLower(strings.TrimSpace(k))
}
