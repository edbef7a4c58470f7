package rayservice

import (
	"strings"
	"time"

	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

// DefaultProxyHealthTimeout bounds the Serve proxy health check (KubeRay's
// RayHttpProxyClient timeout).
const DefaultProxyHealthTimeout = 2 * time.Second

// Config is what the RayService controller reads once at start-up.
type Config struct {
	// Build is the RayCluster controller's Pod and Service options (the
	// cluster domain, the head Service type), for the RayService's head
	// Service and the operator version its clusters record.
	Build podspec.BuildOptions
	// ZeroDowntime: a changed cluster spec without upgradeStrategy.type
	// gets a new cluster (KubeRay's ENABLE_ZERO_DOWNTIME, true unless
	// "false").
	ZeroDowntime bool
	// ProxyHealthTimeout bounds the head's Serve proxy health check.
	ProxyHealthTimeout time.Duration
	// Validation are the options of the RayService rules, the webhook's.
	Validation validation.RayServiceValidationOptions
	// set marks a Config made by ConfigFromEnv (or a test that means its
	// zero values).
	set bool
}

// ConfigFromEnv reads KubeRay's environment variables; gates and build
// options are the caller's.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		Build:              podspec.DefaultBuildOptions(),
		ZeroDowntime:       !strings.EqualFold(strings.TrimSpace(getenv("ENABLE_ZERO_DOWNTIME")), "false"),
		ProxyHealthTimeout: DefaultProxyHealthTimeout,
		set:                true,
	}
}

func (c Config) withDefaults() Config {
	if !c.set {
		build := c.Build
		c = ConfigFromEnv(func(string) string { return "" })
		if build.ClusterDomain != "" {
			c.Build = build
		}
	}
	if c.Build.ClusterDomain == "" {
		c.Build = podspec.DefaultBuildOptions()
	}
	if c.ProxyHealthTimeout <= 0 {
		c.ProxyHealthTimeout = DefaultProxyHealthTimeout
	}
	return c
}
