// Package flux is the ML policy for the Flux framework (mlPolicy.flux), as
// Kubeflow Trainer v2.3 defines it: every pod of the trainer step runs a
// Flux broker, and together they form one Flux instance whose lead broker
// (pod 0) runs the TrainJob's command with `flux run`.
//
// Flux is not in the trainer's image. An init container, flux-installer,
// runs the Flux "view" image (FLUX_VIEW_IMAGE), copies Flux out of it
// into a shared emptyDir at /mnt/flux and writes the broker configuration
// there; the trainer's command is replaced by Gantry's entrypoint, which
// starts the broker from that volume and hands it the original command.
//
// Objects, owned by the TrainJob:
//
//   - ConfigMap <job>-flux-entrypoint, mounted read-only at
//     /etc/flux-config: init.sh (the init container's script),
//     entrypoint.sh (the trainer's) and broker.toml (the broker
//     configuration, rendered as TOML).
//   - Secret <job>-flux-curve, mounted at /curve: curve.cert, the
//     instance's CURVE certificate (ZeroMQ), which the brokers use to
//     authenticate each other. Its key is random, created once and
//     immutable: regenerating it would split a running instance.
//
// The scripts are Gantry's own; the facts in them (paths, volumes, the
// hostlist, the resources given to `flux R encode`, the `flux run` flags,
// the broker configuration) are Trainer v2.3's, which the oracle in
// test/oracle/trainer checks.
package flux
