// Command promql-metrics reads PromQL expressions, one per line, and prints
// each metric name they select, one per line, sorted and without repeats.
// It parses with Prometheus' own parser, so an expression it cannot parse
// is an error (with the line) rather than a name missed. The e2e suite
// uses it to check every metric a chart dashboard or alert reads against
// the series a running manager exported.
package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	names := map[string]bool{}
	p := parser.NewParser(parser.Options{})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for in.Scan() {
		line++
		expr := strings.TrimSpace(in.Text())
		if expr == "" {
			continue
		}
		parsed, err := p.ParseExpr(expr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "promql-metrics: line %d: %v: %s\n", line, err, expr)
			os.Exit(1)
		}
		found := false
		parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
			vs, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if name == "" {
				fmt.Fprintf(os.Stderr, "promql-metrics: line %d selects no metric by name: %s\n", line, expr)
				os.Exit(1)
			}
			names[name] = true
			found = true
			return nil
		})
		if !found {
			fmt.Fprintf(os.Stderr, "promql-metrics: line %d reads no metric: %s\n", line, expr)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "promql-metrics:", err)
		os.Exit(1)
	}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	}) {
		fmt.Println(n)
	}
}
