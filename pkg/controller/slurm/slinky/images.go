package slinky

// Images are the operator's default container images, used when a CR does
// not name one. Upstream leaves this to its Helm chart; Gantry defaults them
// so that a bare CR is valid (the API server rejects a pod template
// without images). An image the CR names always wins; no flag or chart
// value changes these defaults.
type Images struct {
	Slurmctld  string
	Slurmrestd string
	Slurmd     string
	Slurmdbd   string
	// Logfile runs the log-streaming sidecar; any image with a POSIX shell.
	Logfile string
}

// DefaultImages are the images Slinky's chart installs.
func DefaultImages() Images {
	return Images{
		Slurmctld:  "ghcr.io/slinkyproject/slurmctld:25.11-ubuntu24.04",
		Slurmrestd: "ghcr.io/slinkyproject/slurmrestd:25.11-ubuntu24.04",
		Slurmd:     "ghcr.io/slinkyproject/slurmd:25.11-ubuntu24.04",
		Slurmdbd:   "ghcr.io/slinkyproject/slurmdbd:25.11-ubuntu24.04",
		Logfile:    "docker.io/library/alpine:latest",
	}
}

// Or returns i with every empty field taken from fallback.
func (i Images) Or(fallback Images) Images {
	pick := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	return Images{
		Slurmctld:  pick(i.Slurmctld, fallback.Slurmctld),
		Slurmrestd: pick(i.Slurmrestd, fallback.Slurmrestd),
		Slurmd:     pick(i.Slurmd, fallback.Slurmd),
		Slurmdbd:   pick(i.Slurmdbd, fallback.Slurmdbd),
		Logfile:    pick(i.Logfile, fallback.Logfile),
	}
}
