// Command raystandin is a stand-in for the `ray` command line, written from
// scratch for tests. It is installed as /usr/local/bin/ray in a Debian-based
// test image so that the Pods Gantry builds for a RayCluster can start, pass
// their probes and be checked end to end on a real kubelet without Ray.
//
// What it serves:
//
//   - `ray start --head`: a "GCS" port (--port, 6379) that is a plain HTTP
//     server answering GET /healthz with "success" (the stand-in's own health
//     protocol, used by `ray health-check`); the dashboard (--dashboard-host,
//     --dashboard-port, 8265) with /api/gcs_healthz, /api/version, the Ray
//     Jobs REST API that KubeRay's dashboard client calls, and a minimal Serve
//     REST API; the dashboard agent (--dashboard-agent-listen-port, 52365)
//     with /api/local_raylet_healthz and /api/healthz; metrics
//     (--metrics-export-port, 8080) with one gauge; the client port
//     (--ray-client-server-port, 10001), which only accepts TCP; and a Serve
//     proxy port (8000, or RAY_STANDIN_SERVE_PORT; 0 turns it off) answering
//     /-/healthz.
//   - `ray start --address=host:port`: a worker that waits for the GCS, then
//     serves the agent, metrics and Serve proxy ports, and exits when the GCS
//     has been unreachable for RAY_gcs_rpc_server_reconnect_timeout_s.
//   - `ray health-check`, `ray stop`, `ray --version`, and `ray job
//     submit|status|logs|stop|list|delete` as KubeRay's submitter runs them.
//
// What it cannot prove: there is no Ray scheduling (--num-cpus, --num-gpus,
// --memory, --resources and --labels are only checked for the form Ray
// accepts), no object store (/dev/shm is never used), no autoscaler (`ray
// kuberay-autoscaler` is unsupported), no real GCS protocol (a real Ray
// client or raylet cannot talk to it; only this binary's health-check can),
// no Serve (applications are only recorded and reported RUNNING), and jobs run
// as plain `/bin/sh -c` processes in the head container, not as Ray drivers
// on the cluster; runtime_env is honoured only for env_vars. A test that
// passes with the stand-in shows that Pods, commands, ports, probes, Services
// and the operators' HTTP calls fit together, not that Ray works.
//
// Every line the stand-in itself prints starts with "ray-standin:" so that
// Pod logs cannot be mistaken for Ray's; job output relayed by `ray job logs`
// is printed as the job wrote it.
package main
