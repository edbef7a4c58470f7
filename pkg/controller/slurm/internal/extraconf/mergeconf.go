// Package extraconf merges the option lists the operator sets in
// slurm.conf or slurmdbd.conf with those the user's extraConf sets for the
// same keys.
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

// ParseSimpleParameters reads the "Key=value" lines of a slurm.conf snippet
// (case-insensitive keys, the last declaration wins), joining lines continued
// with a backslash and skipping comments and lines that declare several
// keys, such as NodeName= or PartitionName= lines.
func ParseSimpleParameters(conf string) map[string]string {
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
