package podspec

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// Well-known `ray start` flags the operator fills in or reads.
const (
	paramAddress                  = "address"
	paramPort                     = "port"
	paramBlock                    = "block"
	paramNumCPUs                  = "num-cpus"
	paramNumGPUs                  = "num-gpus"
	paramMemory                   = "memory"
	paramResources                = "resources"
	paramLabels                   = "labels"
	paramDashboardHost            = "dashboard-host"
	paramDashboardPort            = "dashboard-port"
	paramDashboardAgentListenPort = "dashboard-agent-listen-port"
	paramMetricsExportPort        = "metrics-export-port"
	paramNoMonitor                = "no-monitor"
	paramPlasmaDirectory          = "plasma-directory"
	paramRedisPassword            = "redis-password"
	paramRedisUsername            = "redis-username"
)

// Container resource names that Ray knows under another name. Only the first
// one found is passed on, as KubeRay does: a Ray node exposes one accelerator
// type besides GPUs.
var customAcceleratorRayNames = map[corev1.ResourceName]string{
	"aws.amazon.com/neuroncore": "neuron_cores",
	"google.com/tpu":            "TPU",
}

// Flags that take an explicit true/false value. Every other flag whose value
// is "true" or "false" is an on/off switch: "--flag" or nothing.
var explicitBooleanFlags = map[string]bool{
	"log-color":           true,
	"include-dashboard":   true,
	"include-log-monitor": true,
}

// GenerateRayStartCommand renders the `ray start` line for a node from its
// completed rayStartParams and the Ray container's resources. Values the user
// set win; num-cpus, memory, num-gpus and custom accelerators are derived
// from the container's resources only when missing. Flags are sorted so the
// command, and every hash over it, is stable. params is not modified.
func GenerateRayStartCommand(nodeType rayv1.RayNodeType, params map[string]string, resources corev1.ResourceRequirements) string {
	p := maps.Clone(params)
	if p == nil {
		p = map[string]string{}
	}
	addContainerResourceParams(p, resources)

	var b strings.Builder
	b.WriteString("ray start")
	if nodeType == rayv1.HeadNode {
		b.WriteString(" --head")
	}
	for _, key := range slices.Sorted(maps.Keys(p)) {
		value := p[key]
		lower := strings.ToLower(value)
		if (lower == "true" || lower == "false") && !explicitBooleanFlags[key] {
			if lower == "true" {
				fmt.Fprintf(&b, " --%s", key)
			}
			continue
		}
		fmt.Fprintf(&b, " --%s=%s", key, value)
	}
	return b.String()
}

// addContainerResourceParams derives resource flags from the container.
// CPU and memory use whole units rounded up, as `ray start` takes integers.
func addContainerResourceParams(p map[string]string, resources corev1.ResourceRequirements) {
	if _, ok := p[paramNumCPUs]; !ok {
		cpu := resources.Limits[corev1.ResourceCPU]
		if cpu.IsZero() {
			// A CPU limit is often left out on purpose to avoid throttling.
			cpu = resources.Requests[corev1.ResourceCPU]
		}
		if !cpu.IsZero() {
			p[paramNumCPUs] = strconv.FormatInt(cpu.Value(), 10)
		}
	}
	if _, ok := p[paramMemory]; !ok {
		if mem := resources.Limits[corev1.ResourceMemory]; !mem.IsZero() {
			p[paramMemory] = strconv.FormatInt(mem.Value(), 10)
		}
	}
	addAcceleratorParams(p, resources.Limits)
}

func addAcceleratorParams(p map[string]string, limits corev1.ResourceList) {
	if len(limits) == 0 {
		return
	}
	custom, err := parseResourcesParam(p[paramResources])
	if err != nil {
		// A malformed user value is passed through untouched; Ray reports it.
		custom = nil
	}
	customAcceleratorSet := err != nil
	for _, rayName := range customAcceleratorRayNames {
		if _, ok := custom[rayName]; ok {
			customAcceleratorSet = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		q := limits[name]
		if q.IsZero() {
			continue
		}
		if _, ok := p[paramNumGPUs]; !ok && IsGPUResource(string(name)) {
			p[paramNumGPUs] = strconv.FormatInt(q.Value(), 10)
		}
		rayName, ok := customAcceleratorRayNames[name]
		if !ok || customAcceleratorSet {
			continue
		}
		if custom == nil {
			custom = map[string]float64{}
		}
		custom[rayName] = q.AsApproximateFloat64()
		p[paramResources] = quoteResourcesJSON(custom)
		customAcceleratorSet = true
	}
}

// parseResourcesParam reads a --resources value, which users write with or
// without shell quotes around the JSON.
func parseResourcesParam(value string) (map[string]float64, error) {
	value = strings.Trim(value, "'\"` ")
	if value == "" {
		return nil, nil
	}
	out := map[string]float64{}
	if err := json.Unmarshal([]byte(value), &out); err != nil {
		return nil, fmt.Errorf("parsing --resources %q: %w", value, err)
	}
	return out, nil
}

// quoteResourcesJSON single-quotes the JSON because the command runs under
// bash, a single quote inside (a resource named with one) closed and
// reopened around an escaped quote, so the value stays one shell word
// whatever the names are. A value JSON cannot hold (a quantity beyond
// float64: +Inf) is left out rather than emptying the whole object.
// encoding/json sorts map keys, so the value is deterministic.
func quoteResourcesJSON(resources map[string]float64) string {
	finite := make(map[string]float64, len(resources))
	for k, v := range resources {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			finite[k] = v
		}
	}
	raw, _ := json.Marshal(finite) // finite float64 values always marshal
	return "'" + strings.ReplaceAll(string(raw), "'", `'\''`) + "'"
}

// IsGPUResource matches "<vendor>/gpu"-style names and NVIDIA MIG slices
// such as nvidia.com/mig-2g.32gb.
func IsGPUResource(name string) bool {
	if strings.HasSuffix(name, "gpu") {
		return true
	}
	return isNvidiaMIGResource(name)
}

func isNvidiaMIGResource(name string) bool {
	rest, ok := strings.CutPrefix(name, "nvidia.com/mig-")
	if !ok {
		return false
	}
	// <digits>g.<digits>gb
	computeSlices, memory, ok := strings.Cut(rest, "g.")
	if !ok || !allDigits(computeSlices) {
		return false
	}
	memory, ok = strings.CutSuffix(memory, "gb")
	return ok && allDigits(memory)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// applyGroupResources writes the group's top-level resources into params.
// They take precedence over the same rayStartParams, so spec.resources is
// the one place a user states Ray logical resources.
func applyGroupResources(p map[string]string, groupResources map[string]string) {
	if len(groupResources) == 0 {
		return
	}
	custom := map[string]float64{}
	for name, value := range groupResources {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			// Validation rejects unparsable quantities; skipping keeps a
			// builder total.
			continue
		}
		switch lower := strings.ToLower(name); {
		case lower == string(corev1.ResourceCPU):
			p[paramNumCPUs] = strconv.FormatInt(q.Value(), 10)
		case lower == string(corev1.ResourceMemory):
			p[paramMemory] = strconv.FormatInt(q.Value(), 10)
		case IsGPUResource(lower):
			p[paramNumGPUs] = strconv.FormatInt(q.Value(), 10)
		default:
			custom[name] = q.AsApproximateFloat64()
		}
	}
	if len(custom) > 0 {
		p[paramResources] = quoteResourcesJSON(custom)
	}
}

// applyGroupLabels writes the group's Ray node labels as --labels, sorted.
func applyGroupLabels(p map[string]string, groupLabels map[string]string) {
	if len(groupLabels) == 0 {
		return
	}
	pairs := make([]string, 0, len(groupLabels))
	for _, k := range slices.Sorted(maps.Keys(groupLabels)) {
		pairs = append(pairs, k+"="+groupLabels[k])
	}
	p[paramLabels] = strings.Join(pairs, ",")
}

// completeRayStartParams returns the full parameter set for a node: the
// user's params, the group's resources and labels, and the defaults KubeRay
// adds. Worker nodes get the head address; `block` is always set so the
// container lives exactly as long as Ray does.
func completeRayStartParams(nodeType rayv1.RayNodeType, userParams, groupResources, groupLabels map[string]string, headAddress string) map[string]string {
	p := maps.Clone(userParams)
	if p == nil {
		p = map[string]string{}
	}
	applyGroupResources(p, groupResources)
	applyGroupLabels(p, groupLabels)
	switch nodeType {
	case rayv1.WorkerNode:
		setDefault(p, paramAddress, headAddress)
	case rayv1.HeadNode:
		// Ray's default, localhost, is unreachable from outside the Pod.
		setDefault(p, paramDashboardHost, "0.0.0.0")
	}
	setDefault(p, paramMetricsExportPort, strconv.Itoa(DefaultMetricsPort))
	p[paramBlock] = "true"
	// The default probes talk to the agent on this port; pinning it keeps
	// probe and agent in agreement even if Ray's default changes.
	setDefault(p, paramDashboardAgentListenPort, strconv.Itoa(DefaultDashboardAgentListenPort))
	return p
}

func setDefault(m map[string]string, key, value string) {
	if _, ok := m[key]; !ok {
		m[key] = value
	}
}

// headPort is the port workers and drivers use to reach the head (the GCS).
func headPort(cluster *rayv1.RayCluster) string {
	if v, ok := cluster.Spec.HeadGroupSpec.RayStartParams[paramPort]; ok {
		return v
	}
	return strconv.Itoa(DefaultGcsServerPort)
}
