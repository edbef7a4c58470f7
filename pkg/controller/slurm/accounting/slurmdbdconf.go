package accounting

import (
	"errors"
	"fmt"
	"strings"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/extraconf"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
)

// SlurmdbdConfFile is the file, and the key of the config Secret, holding
// slurmdbd's configuration.
const SlurmdbdConfFile = "slurmdbd.conf"

// StorageType is the only storage plugin slurmdbd has.
const StorageType = "accounting_storage/mysql"

// errStoragePassword marks a database password slurmdbd.conf cannot carry.
var errStoragePassword = errors.New("the database password cannot be written to slurmdbd.conf")

// RenderSlurmdbdConf renders slurmdbd.conf (see
// https://slurm.schedmd.com/slurmdbd.conf.html) for a, whose database
// password is password. It is what Slinky writes — the daemon's host and
// port, auth/slurm with auth/jwt beside it, the storage settings, logging
// to stderr only — followed by the user's extraConf and, for parameters
// extraConf also sets that the operator needs (AuthAltParameters,
// AuthInfo), both sets of options merged, since slurmdbd keeps a
// parameter's last declaration.
//
// Unlike Slinky, an empty storageConfig.username (slurmdbd then connects as
// the user it runs as) and an empty password are left out rather than
// written as empty values, and the password is escaped so that '#' or '\'
// in it survive Slurm's parser; a password holding a line break is refused,
// as it would end the line and inject configuration.
func RenderSlurmdbdConf(a *slinkyv1beta1.Accounting, password string) (string, error) {
	pass, err := confValue(password)
	if err != nil {
		return "", err
	}
	storage := a.Spec.StorageConfig
	merged := mergeableParameters(a)

	var w confWriter
	w.section("GENERAL")
	w.set("DbdHost", slinky.AccountingPodName(a.Name))
	w.set("DbdPort", slinky.SlurmdbdPort)
	w.set("SlurmUser", slinky.SlurmUser)

	w.section("PLUGINS & PARAMETERS")
	w.set("AuthType", slinky.AuthType)
	w.set("AuthAltTypes", slinky.AuthAltTypes)
	for _, p := range merged {
		w.raw(p.Line())
	}

	w.section("STORAGE")
	w.set("StorageType", StorageType)
	w.set("StorageHost", storage.Host)
	w.set("StoragePort", storage.PortOrDefault())
	if storage.Username != "" {
		w.set("StorageUser", storage.Username)
	}
	w.set("StorageLoc", storage.DatabaseOrDefault())
	if pass != "" {
		w.set("StoragePass", pass)
	}

	w.section("LOGGING")
	// slurmdbd runs in the foreground and logs to stderr, which kubectl
	// logs shows; a log file would only fill the container.
	w.set("LogFile", "/dev/null")

	if a.Spec.ExtraConf != "" {
		w.section("EXTRA CONFIG")
		w.raw(a.Spec.ExtraConf)
		if overrides := extraconf.Merge(merged, a.Spec.ExtraConf); len(overrides) > 0 {
			w.section("MERGED CONFIG")
			for _, p := range overrides {
				w.raw(p.Line())
			}
		}
	}
	return w.String(), nil
}

// mergeableParameters are the option lists slurmdbd needs and a user may
// extend through extraConf.
func mergeableParameters(a *slinkyv1beta1.Accounting) []extraconf.Parameter {
	authAlt := []string{slinky.JwtAuthAltParameters}
	if a.Spec.JwksKeyRef != nil {
		authAlt = append(authAlt, slinky.JwksAuthAltParameters)
	}
	return []extraconf.Parameter{
		{Key: "AuthAltParameters", Options: authAlt},
		{Key: "AuthInfo", Options: []string{slinky.AuthInfo}},
	}
}

// confValue writes v so that Slurm's parser reads it back unchanged: it
// drops every unescaped '\' and ends the line at an unescaped '#', so both
// are escaped; a value with blanks must be double-quoted, and a quoted
// value cannot hold a '"'.
func confValue(v string) (string, error) {
	if strings.ContainsAny(v, "\r\n") {
		return "", fmt.Errorf("%w: it holds a line break", errStoragePassword)
	}
	escaped := strings.NewReplacer(`\`, `\\`, `#`, `\#`).Replace(v)
	needsQuotes := strings.ContainsAny(v, " \t") ||
		// A value that looks quoted would lose its quotes.
		(len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"')
	if !needsQuotes {
		return escaped, nil
	}
	if strings.Contains(v, `"`) {
		return "", fmt.Errorf(`%w: it holds both a blank and a '"'`, errStoragePassword)
	}
	return `"` + escaped + `"`, nil
}

// confWriter accumulates slurmdbd.conf lines, in the layout of slurm.conf.
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
