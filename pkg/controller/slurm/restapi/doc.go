// Package restapi reconciles Slinky RestApis: the slurmrestd Deployment and
// its Service, authenticating to the referenced Controller with JWTs.
package restapi
