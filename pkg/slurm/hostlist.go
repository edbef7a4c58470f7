package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHostlistNames bounds an expansion so a hostile or corrupt expression
// ("n[0-999999999]") cannot exhaust memory; no Slurm cluster is this big.
const maxHostlistNames = 1 << 20

// ExpandHostlist expands a Slurm hostlist expression such as
// "gpu-[01-03,7],cpu-0" or "rack[1-2]-n[1-2]" into node names, in order.
// Zero-padding of a range's lower bound is kept ("[01-03]" → 01, 02, 03).
func ExpandHostlist(expr string) ([]string, error) {
	var names []string
	for _, item := range splitTopLevel(expr) {
		expanded, err := expandHostlistItem(item)
		if err != nil {
			return nil, fmt.Errorf("slurm: hostlist %q: %w", expr, err)
		}
		names = append(names, expanded...)
		if len(names) > maxHostlistNames {
			return nil, fmt.Errorf("slurm: hostlist %q: more than %d names", expr, maxHostlistNames)
		}
	}
	return names, nil
}

// splitTopLevel splits on commas outside brackets.
func splitTopLevel(expr string) []string {
	var items []string
	depth, start := 0, 0
	for i, r := range expr {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				if s := strings.TrimSpace(expr[start:i]); s != "" {
					items = append(items, s)
				}
				start = i + 1
			}
		}
	}
	if s := strings.TrimSpace(expr[start:]); s != "" {
		items = append(items, s)
	}
	return items
}

// expandHostlistItem expands one comma-free item; each bracket group
// multiplies the names so far.
func expandHostlistItem(item string) ([]string, error) {
	names := []string{""}
	for item != "" {
		open := strings.IndexByte(item, '[')
		if open < 0 {
			if strings.IndexByte(item, ']') >= 0 {
				return nil, fmt.Errorf("unbalanced ']' in %q", item)
			}
			for i := range names {
				names[i] += item
			}
			break
		}
		closing := strings.IndexByte(item[open:], ']')
		if closing < 0 {
			return nil, fmt.Errorf("unbalanced '[' in %q", item)
		}
		closing += open
		prefix, ranges := item[:open], item[open+1:closing]
		suffixes, err := expandRanges(ranges)
		if err != nil {
			return nil, err
		}
		if len(names)*len(suffixes) > maxHostlistNames {
			return nil, fmt.Errorf("more than %d names", maxHostlistNames)
		}
		next := make([]string, 0, len(names)*len(suffixes))
		for _, n := range names {
			for _, s := range suffixes {
				next = append(next, n+prefix+s)
			}
		}
		names = next
		item = item[closing+1:]
	}
	return names, nil
}

// expandRanges expands "1-3,07,10-11" into its numbers as strings.
func expandRanges(ranges string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(ranges, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		from, err := strconv.Atoi(lo)
		if err != nil || from < 0 {
			return nil, fmt.Errorf("bad range %q", part)
		}
		to, err := strconv.Atoi(hi)
		if err != nil || to < from {
			return nil, fmt.Errorf("bad range %q", part)
		}
		if to-from >= maxHostlistNames {
			return nil, fmt.Errorf("range %q is too large", part)
		}
		width := len(lo)
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("%0*d", width, i))
		}
	}
	return out, nil
}
