package extraconf

import "strings"

// Parameter is a slurm.conf or slurmdbd.conf key whose value is a
// comma-separated option list that both the operator and the user's
// extraConf may set.
type Parameter struct {
	Key     string
	Options []string
}

// Merge returns, for each parameter extraConf also sets, the
// operator's options followed by the user's. A user option naming the same
// option key as an operator option is dropped: the operator's value is what
// the mounted files and pods are built for (e.g. the jwt_key path). The
// daemons keep a parameter's last declaration, so the result is written
// after extraConf.
func Merge(ops []Parameter, extraConf string) []Parameter {
	user := ParseSimpleParameters(extraConf)
	var out []Parameter
	for _, p := range ops {
		value, ok := user[strings.ToLower(p.Key)]
		if !ok {
			continue
		}
		options := append([]string(nil), p.Options...)
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
		out = append(out, Parameter{p.Key, options})
	}
	return out
}

// ParseSimpleParameters returns the values of the simple keys a
// slurm.conf snippet sets, as the daemon reads them (see Parse): by
// lower-case key, the last declaration winning. Line keys (NodeName=,
// PartitionName=, ...) and lines the daemon refuses are left out.
func ParseSimpleParameters(conf string) map[string]string {
	out := map[string]string{}
	for _, l := range Parse(conf) {
		if l.Err != nil || l.LineKey || len(l.Pairs) == 0 {
			continue
		}
		key, value, _ := strings.Cut(l.Pairs[0], "=")
		out[strings.ToLower(key)] = value
	}
	return out
}

// Line is the parameter's slurm.conf line, its options joined by commas
// and written so that the daemon reads them back as they are.
func (p Parameter) Line() string {
	return p.Key + "=" + FormatValue(strings.Join(p.Options, ","))
}

func optionKey(option string) string {
	k, _, _ := strings.Cut(option, "=")
	return strings.ToLower(strings.TrimSpace(k))
}
