package slinky

import slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"

// Daemon ports.
const (
	SlurmctldPort  = 6817
	SlurmdPort     = 6818
	SlurmdbdPort   = 6819
	SlurmrestdPort = 6820
)

// Users the daemons run as. The UID/GID match Slinky's container images.
const (
	SlurmUser          = "slurm"
	SlurmUserUID int64 = 401
	SlurmUserGID       = SlurmUserUID
	SlurmdUser         = "root"

	// slurmrestd refuses to run as root or SlurmUser, so it runs as nobody.
	SlurmrestdUserUID int64 = 65534
	SlurmrestdUserGID       = SlurmrestdUserUID
)

// Volumes and paths inside the pods.
const (
	SlurmEtcVolume = "slurm-etc"
	SlurmEtcDir    = "/etc/slurm"

	SlurmPidFileVolume = "run"
	SlurmPidFileDir    = "/run"

	SlurmLogFileVolume = "slurm-logfile"
	SlurmLogFileDir    = "/var/log/slurm"

	SlurmctldLogFilePath = SlurmLogFileDir + "/slurmctld.log"
	SlurmdLogFilePath    = SlurmLogFileDir + "/slurmd.log"

	SlurmAuthSocketVolume  = "slurm-authsocket"
	SlurmctldAuthSocketDir = "/run/slurmctld"

	SlurmctldStateSaveVolume = "statesave"
	SlurmctldSpoolDir        = "/var/spool/slurmctld"
	SlurmdSpoolDir           = "/var/spool/slurmd"

	SlurmConfFile  = "slurm.conf"
	CgroupConfFile = "cgroup.conf"
	GresConfFile   = "gres.conf"
)

// Authentication: auth/slurm with a shared key for daemons, auth/jwt for
// slurmrestd and API clients.
const (
	SlurmKeyFile = "slurm.key"
	AuthType     = "auth/slurm"
	CredType     = "cred/slurm" // #nosec G101 -- a plugin name, not a credential.
	AuthInfo     = "use_client_ids"
	AuthAltTypes = "auth/jwt"

	JwtKeyFile           = "jwt.key"
	JwtAuthAltParameters = "jwt_key=" + SlurmEtcDir + "/" + JwtKeyFile

	JwksKeyFile           = "jwks.json"
	JwksAuthAltParameters = "jwks=" + SlurmEtcDir + "/" + JwksKeyFile
)

// Health endpoints served by slurmctld on its port.
const (
	SlurmctldLivez  = "/livez"
	SlurmctldReadyz = "/readyz"
)

// Pod template annotations. The hash annotations change whenever the file or
// key they cover changes, which rolls the pods so the daemons pick it up.
const (
	AnnotationSlurmConfigHash = slinkyv1beta1.SlinkyPrefix + "slurm-config-hash"
	AnnotationSlurmKeyHash    = slinkyv1beta1.SlinkyPrefix + "slurm-key-hash"
	AnnotationJwtKeyHash      = slinkyv1beta1.SlinkyPrefix + "jwt-key-hash"

	// AnnotationDefaultContainer makes `kubectl logs/exec` pick the daemon
	// rather than a sidecar.
	AnnotationDefaultContainer = "kubectl.kubernetes.io/default-container"
)

// FieldOwner is the field manager of every object the Slurm reconcilers
// apply.
const FieldOwner = "gantry-slurm"
