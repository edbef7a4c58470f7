package flux

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Paths inside the shared volume, where the installer puts the broker's
// configuration and the entrypoint its state (Trainer v2.3's layout).
const (
	configRoot       = InstallMountPath + "/config"
	brokerConfigPath = configRoot + "/etc/flux/config/broker.toml"
	resourcePath     = configRoot + "/etc/flux/system/R"
	curveCertPath    = configRoot + "/etc/curve/curve.cert"
	archivePath      = configRoot + "/var/lib/flux/job-archive.sqlite"
	// brokerPort is the brokers' default port (bootstrap.default_port).
	brokerPort = 8050
)

// settingsMarker is the line of each script that Gantry replaces with the
// script's settings for the TrainJob.
const settingsMarker = "#@gantry-settings@\n"

var (
	//go:embed scripts/init.sh
	initTemplate string
	//go:embed scripts/entrypoint.sh
	entrypointTemplate string
)

// instance is the Flux instance of one TrainJob: one broker per pod of
// the trainer step.
type instance struct {
	trainJobName string
	namespace    string
	// podSetName is the trainer's replicated job: pods are named
	// <job>-<podSetName>-0-<index>.
	podSetName string
	// subdomain is the pods' headless Service.
	subdomain string
	nodes     int64
	// procs is the tasks per node: spec.trainer.numProcPerNode, else the
	// policy's (at least 1).
	procs int64
	// gpus is the GPUs per node, from the effective resources per node.
	gpus     int64
	settings Settings
	// clusterDomain is the cluster DNS suffix of the brokers' addresses.
	clusterDomain string
}

func instanceFor(info *plugin.Info, ps *plugin.PodSet, trainJob *trainer.TrainJob) instance {
	procs := int32(1)
	if p := info.MLPolicy.Flux.NumProcPerNode; p != nil {
		procs = *p
	}
	if t := trainJob.Spec.Trainer; t != nil && t.NumProcPerNode != nil {
		procs = *t.NumProcPerNode
	}
	return instance{
		trainJobName:  trainJob.Name,
		namespace:     trainJob.Namespace,
		podSetName:    ps.Name,
		subdomain:     info.Subdomain(trainJob.Name),
		nodes:         int64(max(1, ps.Count)),
		procs:         int64(max(1, procs)),
		gpus:          plugin.GPUCount(plugin.ResourcesPerNode(info, trainJob)),
		settings:      SettingsFor(info, trainJob),
		clusterDomain: plugin.DefaultClusterDomain,
	}
}

// leadHost is the hostname of the pod whose broker runs the command.
func (in instance) leadHost() string {
	return fmt.Sprintf("%s-%s-0-0", in.trainJobName, in.podSetName)
}

// hostlist is every broker's hostname, in Flux's hostlist notation.
func (in instance) hostlist() string {
	return fmt.Sprintf("%s-%s-0-[%s]", in.trainJobName, in.podSetName, idRange(in.nodes))
}

// resources are the `flux R encode` options for one node: a core per
// task, and the node's GPUs.
func (in instance) resources() []string {
	r := []string{"--cores=" + idRange(in.procs)}
	if in.gpus > 0 {
		r = append(r, "--gpu="+idRange(in.gpus))
	}
	return r
}

// runFlags are `flux run`'s options: the nodes, the tasks in all, and,
// with GPUs, -g (gpus-per-task) set to the GPUs per node, as Trainer
// v2.3 does.
func (in instance) runFlags() []string {
	f := []string{"-N", strconv.FormatInt(in.nodes, 10), "-n", strconv.FormatInt(in.nodes*in.procs, 10)}
	if in.gpus > 0 {
		f = append(f, "-g", strconv.FormatInt(in.gpus, 10))
	}
	return f
}

// idRange is Flux's idset of n ids from 0: "0", "0-3".
func idRange(n int64) string {
	if n <= 1 {
		return "0"
	}
	return fmt.Sprintf("0-%d", n-1)
}

// brokerConfig is the broker's configuration file (broker.toml).
type brokerConfig struct {
	Access struct {
		AllowGuestUser bool `toml:"allow-guest-user"`
		AllowRootOwner bool `toml:"allow-root-owner"`
	} `toml:"access"`
	Resource struct {
		// Path is the resource set (R) each node's entrypoint encodes.
		Path string `toml:"path"`
	} `toml:"resource"`
	Bootstrap struct {
		CurveCert      string          `toml:"curve_cert"`
		DefaultPort    int             `toml:"default_port"`
		DefaultBind    string          `toml:"default_bind"`
		DefaultConnect string          `toml:"default_connect"`
		Hosts          []bootstrapHost `toml:"hosts"`
	} `toml:"bootstrap"`
	Archive struct {
		DBPath      string `toml:"dbpath"`
		Period      string `toml:"period"`
		BusyTimeout string `toml:"busytimeout"`
	} `toml:"archive"`
	QueueManager struct {
		QueuePolicy string `toml:"queue-policy"`
	} `toml:"sched-fluxion-qmanager"`
}

type bootstrapHost struct {
	Host string `toml:"host"`
}

// brokerConfig renders broker.toml. %h and %p are the broker's own
// placeholders for a host and the port.
func (in instance) brokerConfig() (string, error) {
	var c brokerConfig
	c.Access.AllowGuestUser = true
	c.Access.AllowRootOwner = true
	c.Resource.Path = resourcePath
	c.Bootstrap.CurveCert = curveCertPath
	c.Bootstrap.DefaultPort = brokerPort
	c.Bootstrap.DefaultBind = "tcp://" + in.settings.NetworkDevice + ":%p"
	c.Bootstrap.DefaultConnect = fmt.Sprintf("tcp://%%h.%s.%s.svc.%s:%%p", in.subdomain, in.namespace, in.clusterDomain)
	c.Bootstrap.Hosts = []bootstrapHost{{Host: in.hostlist()}}
	c.Archive.DBPath = archivePath
	c.Archive.Period = "1m"
	c.Archive.BusyTimeout = "50s"
	c.QueueManager.QueuePolicy = in.settings.QueuePolicy
	out, err := toml.Marshal(c)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// initScript is the installer's script with its setting, the hostlist.
func (in instance) initScript() (string, error) {
	host, err := quoteWord(in.hostlist(), false)
	if err != nil {
		return "", err
	}
	return withSettings(initTemplate, "hostlist="+host+"\n")
}

// entrypointScript is the trainer's entrypoint with its settings: the
// lead broker's hostname, the resources of a node and the run flags.
func (in instance) entrypointScript() (string, error) {
	lead, err := quoteWord(in.leadHost(), false)
	if err != nil {
		return "", err
	}
	resources, err := words(in.resources())
	if err != nil {
		return "", err
	}
	flags, err := words(in.runFlags())
	if err != nil {
		return "", err
	}
	return withSettings(entrypointTemplate, fmt.Sprintf("lead_host=%s\nresources=(%s)\nrun_flags=(%s)\n", lead, resources, flags))
}

// withSettings puts the settings where the script's marker line is.
func withSettings(script, settings string) (string, error) {
	if strings.Count(script, settingsMarker) != 1 {
		return "", fmt.Errorf("the script template has %d settings markers, want 1", strings.Count(script, settingsMarker))
	}
	return strings.Replace(script, settingsMarker, "# Set by Gantry for this TrainJob.\n"+settings, 1), nil
}
