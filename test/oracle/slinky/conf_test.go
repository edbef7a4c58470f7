package slinky_test

import (
	"slices"
	"sort"
	"strings"
)

// Helpers for the rules that edit configuration files (slurm.conf,
// slurmdbd.conf, sshd_config, ...): the files are the data of a ConfigMap
// or (decoded, see the "Secret files as text" normalization) a Secret.

// editFile edits the lines of data[name] of m; it reports a change.
func editFile(m map[string]any, name string, f func([]string) []string) bool {
	data := mapAt(m, "data")
	text, ok := data[name].(string)
	if !ok {
		return false
	}
	out := strings.Join(f(strings.Split(text, "\n")), "\n")
	if out == text {
		return false
	}
	data[name] = out
	return true
}

// section is the [start, end) range of the lines of a "### title ###"
// section, header excluded; end is the "#" line that opens the next
// section, or the end of the file. ok is false without such a section.
func section(lines []string, title string) (start, end int, ok bool) {
	header := "### " + title + " ###"
	i := slices.Index(lines, header)
	if i < 0 {
		return 0, 0, false
	}
	for j := i + 1; j < len(lines); j++ {
		if lines[j] == "#" && j+1 < len(lines) && strings.HasPrefix(lines[j+1], "### ") {
			return i + 1, j, true
		}
	}
	end = len(lines)
	if end > i+1 && lines[end-1] == "" {
		end-- // the final newline
	}
	return i + 1, end, true
}

// removeInSection drops the lines of a section that match.
func removeInSection(lines []string, title string, match func(string) bool) []string {
	start, end, ok := section(lines, title)
	if !ok {
		return lines
	}
	out := slices.Clone(lines[:start])
	for _, l := range lines[start:end] {
		if !match(l) {
			out = append(out, l)
		}
	}
	return append(out, lines[end:]...)
}

// insertBeforeSection puts lines before the "#" line that opens a section.
func insertBeforeSection(lines []string, title string, add ...string) []string {
	i := slices.Index(lines, "### "+title+" ###")
	if i < 1 || lines[i-1] != "#" {
		return lines
	}
	return slices.Concat(lines[:i-1], add, lines[i-1:])
}

// dropSection removes a section, header and body.
func dropSection(lines []string, title string) []string {
	start, end, ok := section(lines, title)
	if !ok {
		return lines
	}
	return slices.Concat(lines[:start-2], lines[end:])
}

// replaceLine replaces the first line for which match holds.
func replaceLine(lines []string, match func(string) bool, with ...string) []string {
	for i, l := range lines {
		if match(l) {
			return slices.Concat(lines[:i], with, lines[i+1:])
		}
	}
	return lines
}

func prefixed(p string) func(string) bool {
	return func(l string) bool { return strings.HasPrefix(l, p) }
}
func oneOf(ls ...string) func(string) bool {
	return func(l string) bool { return slices.Contains(ls, l) }
}

// slurmKV is what Slinky v1.2.1 reads of an extraConf for merging
// (common/common.go:281-321, parseSlurmConfKV): by lower-cased key, the value of the last
// line key=value, comments aside, whose value holds no blank. (Slinky also
// joins lines ending in "\"; no case of the corpus has one.)
func slurmKV(conf string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(conf, "\n") {
		line, _, _ = strings.Cut(line, "#")
		key, val, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && key != "" && val != "" && !strings.ContainsAny(val, " \t") {
			out[strings.ToLower(strings.TrimSpace(key))] = strings.TrimSpace(val)
		}
	}
	return out
}

// v12MergedLines are the "### MERGED CONFIG ###" lines Slinky v1.2.1
// appends after extraConf (common/common.go:246-279, BuildMergedConfig):
// for each of the operator's parameters (by name) that extraConf also
// sets, the operator's options and extraConf's (lower-cased) whose option
// name the operator's do not have, deduplicated and sorted.
func v12MergedLines(extraConf string, operator map[string][]string) []string {
	user := slurmKV(extraConf)
	keys := make([]string, 0, len(operator))
	for k := range operator {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		val, ok := user[strings.ToLower(k)]
		if !ok {
			continue
		}
		opts := map[string]bool{}
		seen := map[string]bool{}
		for _, o := range operator[k] {
			opts[o] = true
			seen[optionName(o)] = true
		}
		for _, o := range strings.Split(val, ",") {
			if o == "" || seen[optionName(o)] {
				continue
			}
			opts[strings.ToLower(o)] = true
			seen[optionName(o)] = true
		}
		list := make([]string, 0, len(opts))
		for o := range opts {
			list = append(list, o)
		}
		sort.Strings(list)
		out = append(out, k+"="+strings.Join(list, ","))
	}
	return out
}

func optionName(o string) string {
	k, _, _ := strings.Cut(o, "=")
	return strings.ToLower(k)
}
