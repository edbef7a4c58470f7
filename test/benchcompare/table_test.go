//go:build benchcompare

package benchcompare

import (
	"fmt"
	"slices"
	"strings"
)

// table renders one pairing's results as Markdown: per figure, the median
// and the range of each side and the Gantry/upstream ratio of medians.
func table(p pairing, n, rounds int, results map[string][]sample) string {
	up, ga := results[p.upstream.name], results[p.gantry.name]
	var b strings.Builder
	limit := fmt.Sprintf("QPS %d / burst %d", qps, burst)
	if p.upstream.unlimited {
		limit += fmt.Sprintf(" (%s: no client limit, it has no flag for one)", p.upstream.name)
	}
	if k := workers(); k > 0 {
		limit += fmt.Sprintf(", %d workers each", k)
	} else {
		limit += ", workers as shipped"
	}
	if componentLimitsRaised() {
		limit += "; kube-scheduler and kube-controller-manager at QPS 5000 / burst 10000"
	} else {
		limit += "; kube-scheduler and kube-controller-manager at their default client limits"
	}
	fmt.Fprintf(&b, "### %s: %s vs Gantry, N=%d, %d rounds (A B alternating), %s\n\n", p.name, p.upstream.name, n, rounds, limit)
	fmt.Fprintf(&b, "| figure | %s median (min–max) | Gantry median (min–max) | Gantry / %s |\n|---|---|---|---|\n", p.upstream.name, p.upstream.name)
	row := func(name, format string, get func(sample) float64) {
		u, g := figures(up, get), figures(ga, get)
		ratio := "–"
		if u.median > 0 && len(g.values) > 0 {
			ratio = fmt.Sprintf("%.2f×", g.median/u.median)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, u.format(format), g.format(format), ratio)
	}
	row("s until the harness had created every "+p.unit, "%.1f", func(s sample) float64 { return s.submitted.Seconds() })
	for i, ph := range p.phases {
		row("s to "+ph.name, "%.1f", func(s sample) float64 { return s.phases[i].Seconds() })
	}
	row("writes per "+p.unit, "%.2f", func(s sample) float64 { return s.writes })
	row("writes over the process's life (start-up included)", "%.0f", func(s sample) float64 { return float64(s.writesWhole) })
	// What the client limit would cost if it were one limit for all
	// writes, and what it costs as controller-runtime applies it: one per
	// resource type (clientLimitFloor). An operator without a client limit
	// (Slinky here) has neither.
	row("writes ÷ QPS (s)", "%.1f", func(s sample) float64 { return float64(s.writesTotal) / qps })
	row("client-limit floor (s): most-written resource's writes beyond the burst ÷ QPS", "%.1f", func(s sample) float64 { return s.limitFloor })
	row("reads per "+p.unit, "%.2f", func(s sample) float64 { return s.reads })
	if slices.ContainsFunc(append(slices.Clone(up), ga...), func(s sample) bool { return s.proxied > 0 }) {
		row("dashboard calls per "+p.unit+" (services/proxy)", "%.2f", func(s sample) float64 { return s.proxied })
	}
	row("peak RSS (MiB)", "%.0f", func(s sample) float64 { return s.rssMiB })
	row("idle RSS (MiB)", "%.0f", func(s sample) float64 { return s.idleMiB })
	row("RSS per "+p.unit+" (KiB)", "%.0f", func(s sample) float64 { return (s.rssMiB - s.idleMiB) * 1024 / float64(n) })
	row("CPU seconds", "%.1f", func(s sample) float64 { return s.cpuSecond })
	row("API server CPU seconds", "%.1f", func(s sample) float64 { return s.controlPlaneCPU["kube-apiserver"] })
	row("rest of the control plane, CPU seconds", "%.1f", func(s sample) float64 {
		sum := 0.0
		for name, v := range s.controlPlaneCPU {
			if name != "kube-apiserver" {
				sum += v
			}
		}
		return sum
	})
	row("reconciles per "+p.unit, "%.2f", func(s sample) float64 { return s.reconciles / float64(n) })
	row("reconcile errors", "%.0f", func(s sample) float64 { return s.errors })
	row("reconciles asking to requeue", "%.0f", func(s sample) float64 { return s.requeues })
	row("reconcile p50 (ms)", "%.1f", func(s sample) float64 { return s.reconcileP50 * 1000 })
	row("reconcile p99 (ms)", "%.1f", func(s sample) float64 { return s.reconcileP99 * 1000 })
	row("reconcile time per "+p.unit+" (ms)", "%.1f", func(s sample) float64 { return s.reconcileSeconds * 1000 / float64(n) })
	row("mean queue wait (s)", "%.2f", func(s sample) float64 { return s.queueMean })
	return b.String()
}

type stats struct {
	values   []float64
	median   float64
	min, max float64
}

func figures(samples []sample, get func(sample) float64) stats {
	var st stats
	for _, s := range samples {
		st.values = append(st.values, get(s))
	}
	if len(st.values) == 0 {
		return st
	}
	slices.Sort(st.values)
	st.min, st.max = st.values[0], st.values[len(st.values)-1]
	mid := len(st.values) / 2
	st.median = st.values[mid]
	if len(st.values)%2 == 0 {
		st.median = (st.values[mid-1] + st.values[mid]) / 2
	}
	return st
}

func (st stats) format(f string) string {
	if len(st.values) == 0 {
		return "no run"
	}
	return fmt.Sprintf(f+" ("+f+"–"+f+")", st.median, st.min, st.max)
}
