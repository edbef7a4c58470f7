package slurmctld

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
)

// MaxNodeCount must be non-zero for slurmd pods to register as dynamic nodes.
const MaxNodeCount = 1024

// ConfigInputs is everything slurm.conf depends on besides the Controller.
type ConfigInputs struct {
	// NodeSets of this Controller; rendered sorted by name.
	NodeSets []slinkyv1beta1.NodeSet
	// Script file names, from the keys of the referenced ConfigMaps.
	PrologScripts          []string
	EpilogScripts          []string
	PrologSlurmctldScripts []string
	EpilogSlurmctldScripts []string
	// UserConfigFiles are the file names the configFileRefs ConfigMaps
	// supply. A default file of the same name (cgroup.conf, gres.conf) is
	// not rendered: two files of one name cannot share the projected volume.
	UserConfigFiles []string
	// Accounting is the Accounting accountingRef names; nil when unset or
	// not (yet) found, and then slurmctld keeps no accounting, as Slinky's.
	Accounting *slinkyv1beta1.Accounting
}

// ReadUserFiles fills in's file names from the ConfigMaps c's configFileRefs
// and script refs name, each got through get. It returns the data of every
// one of them keyed "<configmap>/<key>", for the config hash.
func (in *ConfigInputs) ReadUserFiles(c *slinkyv1beta1.Controller, get func(name string) (*corev1.ConfigMap, error)) (map[string]string, error) {
	userFiles := map[string]string{}
	read := func(refs []corev1.LocalObjectReference) ([]string, error) {
		var files []string
		for _, ref := range refs {
			cm, err := get(ref.Name)
			if err != nil {
				return nil, err
			}
			for k, v := range cm.Data {
				files = append(files, k)
				userFiles[cm.Name+"/"+k] = v
			}
			for k, v := range cm.BinaryData {
				files = append(files, k)
				userFiles[cm.Name+"/"+k] = string(v)
			}
		}
		return files, nil
	}
	for _, s := range []struct {
		refs []corev1.LocalObjectReference
		into *[]string
	}{
		{c.Spec.ConfigFileRefs, &in.UserConfigFiles},
		{c.Spec.PrologScriptRefs, &in.PrologScripts},
		{c.Spec.EpilogScriptRefs, &in.EpilogScripts},
		{c.Spec.PrologSlurmctldScriptRefs, &in.PrologSlurmctldScripts},
		{c.Spec.EpilogSlurmctldScriptRefs, &in.EpilogSlurmctldScripts},
	} {
		files, err := read(s.refs)
		if err != nil {
			return nil, err
		}
		*s.into = files
	}
	return userFiles, nil
}

// confWriter accumulates slurm.conf lines.
type confWriter struct{ lines []string }

func (w *confWriter) section(title string) { w.lines = append(w.lines, "#", "### "+title+" ###") }
func (w *confWriter) set(key string, value any) {
	w.lines = append(w.lines, fmt.Sprintf("%s=%v", key, value))
}
func (w *confWriter) raw(s string) {
	if s = strings.TrimRight(s, "\n"); s != "" {
		w.lines = append(w.lines, s)
	}
}
func (w *confWriter) String() string { return strings.Join(w.lines, "\n") + "\n" }

// RenderSlurmConf renders slurm.conf for a slurmctld run by the operator.
// See https://slurm.schedmd.com/slurm.conf.html. Parameters whose options
// the user may extend in extraConf are declared by the operator and, when
// extraConf sets them too, declared again after it with both sets of
// options, since slurm.conf keeps the last declaration.
func RenderSlurmConf(c *slinkyv1beta1.Controller, in ConfigInputs) string {
	clusterName := c.ClusterName()
	merged := mergeableParameters(c)

	var w confWriter
	w.section("GENERAL")
	w.set("ClusterName", clusterName)
	w.set("SlurmUser", slinky.SlurmUser)
	for i := range int(slinky.ControllerReplicas(c)) {
		w.set("SlurmctldHost", fmt.Sprintf("%s(%s)", slinky.ControllerPodName(c.Name, i), slinky.ControllerPodFQDNShort(c.Name, c.Namespace, i)))
	}
	w.set("SlurmctldPort", slinky.SlurmctldPort)
	w.set("SlurmctldAddr", slinky.ControllerServiceFQDNShort(c.Name, c.Namespace))
	w.set("StateSaveLocation", stateSaveLocation(clusterName))
	w.set("SlurmdUser", slinky.SlurmdUser)
	w.set("SlurmdPort", slinky.SlurmdPort)
	w.set("SlurmdSpoolDir", slinky.SlurmdSpoolDir)
	w.set("MaxNodeCount", MaxNodeCount)

	w.section("LOGGING")
	w.set("SlurmctldLogFile", slinky.SlurmctldLogFilePath)
	w.set("SlurmSchedLogFile", slinky.SlurmctldLogFilePath)
	w.set("SlurmdLogFile", slinky.SlurmdLogFilePath)

	w.section("PLUGINS & PARAMETERS")
	w.set("AuthType", slinky.AuthType)
	w.set("CredType", slinky.CredType)
	w.set("AuthAltTypes", slinky.AuthAltTypes)
	for _, p := range merged {
		w.raw(p.Line())
	}
	if c.Spec.Metrics.Enabled {
		w.set("MetricsType", "metrics/openmetrics")
	}

	w.section("DYNAMIC NODES")
	writeDynamicNodeDefaults(&w)

	w.section("ACCOUNTING")
	writeAccounting(&w, in.Accounting)

	if len(in.PrologSlurmctldScripts) > 0 || len(in.EpilogSlurmctldScripts) > 0 {
		w.section("SLURMCTLD PROLOG & EPILOG")
		for _, f := range sorted(in.PrologSlurmctldScripts) {
			w.set("PrologSlurmctld", path.Join(slinky.SlurmEtcDir, f))
		}
		for _, f := range sorted(in.EpilogSlurmctldScripts) {
			w.set("EpilogSlurmctld", path.Join(slinky.SlurmEtcDir, f))
		}
	}

	// Prolog and Epilog run on slurmd, which receives them through
	// configless mode, so they are named relative to its config directory.
	if len(in.PrologScripts) > 0 || len(in.EpilogScripts) > 0 {
		w.section("PROLOG & EPILOG")
		for _, f := range sorted(in.PrologScripts) {
			w.set("Prolog", f)
		}
		for _, f := range sorted(in.EpilogScripts) {
			w.set("Epilog", f)
		}
	}

	if len(in.NodeSets) > 0 {
		w.section("NODESET & PARTITION")
		for _, line := range nodeSetLines(in.NodeSets) {
			w.raw(line)
		}
	}

	if c.Spec.ExtraConf != "" {
		w.section("EXTRA CONFIG")
		w.raw(c.Spec.ExtraConf)
		if overrides := mergeWithExtraConf(merged, c.Spec.ExtraConf); len(overrides) > 0 {
			w.section("MERGED CONFIG")
			for _, p := range overrides {
				w.raw(p.Line())
			}
		}
	}
	return w.String()
}

// RenderExternalSlurmConf renders the minimal slurm.conf slurmrestd needs to
// reach a slurmctld that runs outside Kubernetes (no configless there);
// accounting is the Controller's Accounting, as in ConfigInputs.
func RenderExternalSlurmConf(c *slinkyv1beta1.Controller, accounting *slinkyv1beta1.Accounting) string {
	var w confWriter
	w.section("GENERAL")
	w.set("ClusterName", c.ClusterName())
	w.set("SlurmUser", slinky.SlurmUser)
	if ext := c.Spec.ExternalConfig; ext != nil {
		w.set("SlurmctldHost", ext.Host)
		w.set("SlurmctldPort", ext.Port)
	}
	w.section("PLUGINS & PARAMETERS")
	w.set("AuthType", slinky.AuthType)
	w.set("CredType", slinky.CredType)
	w.set("AuthAltTypes", slinky.AuthAltTypes)
	w.section("ACCOUNTING")
	writeAccounting(&w, accounting)
	return w.String()
}

// writeDynamicNodeDefaults sets what a cluster of slurmd pods that come
// and go (dynamic nodes, slurmd -Z) needs to run jobs confined to the pod's
// share of the host and to take a replaced pod back. Slinky leaves these to
// the user (commented out in its chart's values); Gantry sets them, and a
// line of the Controller's extraConf, rendered later, overrides any of them
// since slurm.conf keeps a parameter's last declaration.
//
//   - ReturnToService=2: a DOWN node whose slurmd registers with a valid
//     configuration is used again, so a pod that comes back is not left
//     DOWN by its predecessor's preStop.
//   - ProctrackType, TaskPlugin and JobAcctGatherType on cgroups: job
//     processes are tracked, confined to their CPUs and memory, and
//     accounted through cgroup v2 (cgroup.conf).
//   - PrologFlags=Contain: every process of a job, including ones started
//     by ssh, is inside the job's cgroup from the start.
//   - GresTypes=gpu: nodes may offer GPUs; gres.conf detects them.
func writeDynamicNodeDefaults(w *confWriter) {
	w.set("ReturnToService", 2)
	w.set("ProctrackType", "proctrack/cgroup")
	w.set("TaskPlugin", "task/cgroup,task/affinity")
	w.set("JobAcctGatherType", "jobacct_gather/cgroup")
	w.set("PrologFlags", "Contain")
	w.set("GresTypes", "gpu")
}

// RenderGresConf renders the default gres.conf; see
// https://slurm.schedmd.com/gres.conf.html. AutoDetect=full tries every
// detection mechanism (NVML, NVIDIA, RSMI, oneAPI, NRT) on each slurmd, so
// a pod on a GPU host offers its GPUs and one elsewhere offers none.
func RenderGresConf() string {
	var w confWriter
	w.set("AutoDetect", "full")
	return w.String()
}

// defaultConfigFiles are the files besides slurm.conf the operator renders
// unless the user supplies their own.
var defaultConfigFiles = map[string]func() string{
	slinky.CgroupConfFile: RenderCgroupConf,
	slinky.GresConfFile:   RenderGresConf,
}

// RenderCgroupConf renders cgroup.conf; see
// https://slurm.schedmd.com/cgroup.conf.html. Systemd is ignored because
// the daemons run in containers without it.
func RenderCgroupConf() string {
	var w confWriter
	w.set("CgroupPlugin", "cgroup/v2")
	w.set("IgnoreSystemd", "yes")
	return w.String()
}

func stateSaveLocation(clusterName string) string {
	return path.Join(slinky.SlurmctldSpoolDir, clusterName)
}

// writeAccounting points slurmctld at slurmdbd's Service, <name>-accounting
// as Slinky names it, once the Accounting exists; until then slurmctld
// keeps no accounting, as with Slinky. Beyond Slinky, which always names
// the Service and port 6819: an external Accounting is reached at its
// externalConfig, and the Service's port at spec.service.port when set.
func writeAccounting(w *confWriter, a *slinkyv1beta1.Accounting) {
	if a == nil {
		w.set("AccountingStorageType", "accounting_storage/none")
		return
	}
	host, port := slinky.AccountingName(a.Name), slinky.SlurmdbdPort
	if a.Spec.Service.Port != 0 {
		port = a.Spec.Service.Port
	}
	if ext := a.Spec.ExternalConfig; a.Spec.External && ext != nil {
		host, port = ext.Host, ext.Port
	}
	w.set("AccountingStorageType", "accounting_storage/slurmdbd")
	w.set("AccountingStorageHost", host)
	w.set("AccountingStoragePort", port)
}

// nodeSetLines declares each NodeSet as a Slurm nodeset selected by a
// feature the slurmd pods register with, plus its partition when enabled.
func nodeSetLines(nodeSets []slinkyv1beta1.NodeSet) []string {
	names := make([]string, 0, len(nodeSets))
	byName := make(map[string]*slinkyv1beta1.NodeSet, len(nodeSets))
	for i := range nodeSets {
		name := slinky.SlurmNodeSetName(&nodeSets[i])
		if _, dup := byName[name]; dup {
			continue
		}
		byName[name] = &nodeSets[i]
		names = append(names, name)
	}
	slices.Sort(names)
	var lines []string
	for _, name := range names {
		lines = append(lines, fmt.Sprintf("NodeSet=%s Feature=%s", name, name))
		if p := byName[name].Spec.Partition; p.Enabled {
			lines = append(lines, strings.TrimSpace(fmt.Sprintf("PartitionName=%s Nodes=%s %s", name, name, p.Config)))
		}
	}
	return lines
}

func sorted(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}
