package slinky_test

// Object keys of the v1.2.1 chart's cluster the variants change.
const (
	ctl  = "Controller/slurm"
	ns   = "NodeSet/slurm-worker-slinky"
	ra   = "RestApi/slurm"
	ls   = "LoginSet/slurm-login-slinky"
	acct = "Accounting/slurm"
)

// variants exercise, field by field, what the chart's defaults leave out.
// Each is admitted by Gantry's webhooks (TestCorpusIsAdmitted).
var variants = []variant{
	// NodeSet: the pod template and the slurmd container.
	{name: "nodeset pod template overrides", patch: map[string]string{ns: `
spec:
  template:
    metadata:
      labels: {team: hpc}
      annotations: {example.com/note: "x"}
    spec:
      priorityClassName: high
      serviceAccountName: slurmd
      nodeSelector: {pool: cpu}
      imagePullSecrets: [{name: regcred}]
      dnsPolicy: ClusterFirstWithHostNet
      terminationGracePeriodSeconds: 120
      securityContext: {fsGroup: 1000}
      volumes:
      - name: scratch
        emptyDir: {}
      - name: shared
        nfs: {server: nfs.example.com, path: /export}
      initContainers:
      - name: setup
        image: busybox
        command: [sh, -c, "true"]
      containers:
      - name: sidecar
        image: busybox
        command: [sleep, infinity]
`}},
	{name: "nodeset slurmd container overrides", patch: map[string]string{ns: `
spec:
  slurmd:
    args: [-vvv]
    env:
    - {name: FOO, value: bar}
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    ports:
    - {name: metrics, containerPort: 9100}
    securityContext: {privileged: true, capabilities: {add: [SYS_PTRACE]}}
    readinessProbe:
      exec: {command: [scontrol, ping]}
  template:
    spec:
      volumes:
      - name: scratch
        emptyDir: {medium: Memory}
`}},
	{name: "nodeset resources", patch: map[string]string{ns: `
spec:
  slurmd:
    resources:
      requests: {cpu: "2", memory: 4Gi}
      limits: {cpu: 2500m, memory: 6Gi, nvidia.com/gpu: "1"}
`}},
	{name: "nodeset pod-level resources", patch: map[string]string{ns: `
spec:
  template:
    spec:
      resources:
        limits: {cpu: "8", memory: 16Gi}
`}},
	{name: "nodeset own tolerations and affinity", patch: map[string]string{ns: `
spec:
  template:
    spec:
      tolerations:
      - {key: gpu, operator: Exists, effect: NoSchedule}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: pool, operator: In, values: [gpu]}
`}},
	{name: "nodeset volumeClaimTemplates", patch: map[string]string{ns: `
spec:
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Retain}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: fast
      resources: {requests: {storage: 10Gi}}
  slurmd:
    volumeMounts:
    - {name: data, mountPath: /data}
`}},
	{name: "nodeset ssh", patch: map[string]string{ns: `
spec:
  ssh:
    enabled: true
    sssdConfRef: {name: slurm-sssd-conf, key: sssd.conf}
    extraSshdConfig: |
      Match User alice
        PasswordAuthentication no
`}},
	{name: "nodeset extraConf", patch: map[string]string{ns: `
spec:
  extraConf: "Weight=10 Features=fast,ib CPUSpecList=0-1"
`}},
	{name: "nodeset partition and no hostname", patch: map[string]string{ns: `
spec:
  partition:
    enabled: true
    config: "State=UP MaxTime=UNLIMITED Default=YES"
  template:
    spec:
      hostname: null
`}},
	{name: "nodeset ordinal padding", patch: map[string]string{ns: `
spec:
  ordinalPadding: 3
  replicas: 12
`}, pods: []renderPod{{NodeSet: "slurm-worker-slinky", Ordinal: 11}}},
	{name: "nodeset logfile override", patch: map[string]string{ns: `
spec:
  logfile:
    image: busybox:1.37
    resources: {limits: {memory: 32Mi}}
`}},
	{name: "nodeset DaemonSet scaling", patch: map[string]string{ns: `
spec:
  scalingMode: DaemonSet
`}},
	{name: "nodeset DaemonSet scaling with claims", patch: map[string]string{ns: `
spec:
  scalingMode: DaemonSet
  volumeClaimTemplates:
  - metadata: {name: scratch}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
  slurmd:
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
`}},
	{name: "two nodesets with partitions", patch: map[string]string{ns: `
spec:
  partition: {enabled: true, config: "State=UP"}
`}, add: []string{`
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: gpu}
spec:
  controllerRef: {name: slurm}
  replicas: 2
  partition: {enabled: true, config: "State=UP MaxTime=1-00:00:00"}
  slurmd: {image: ghcr.io/slinkyproject/slurmd:26.05-ubuntu26.04}
  extraConf: "Gres=gpu:2"
`}},

	// Controller.
	{name: "controller extraConf merged", patch: map[string]string{ctl: `
spec:
  extraConf: |
    SlurmctldDebug=debug2
    SlurmctldParameters=enable_stepmgr,idle_on_node_suspend
    AuthInfo=cred_expire=70
    SchedulerParameters=batch_sched_delay=20,bf_continue
`}},
	{name: "controller without accounting", patch: map[string]string{ctl: `
spec:
  accountingRef: null
`}},
	{name: "controller with missing accounting", patch: map[string]string{ctl: `
spec:
  accountingRef: {name: elsewhere}
`}},
	{name: "controller config files and scripts", patch: map[string]string{ctl: `
spec:
  configFileRefs: [{name: extra-conf}]
  prologScriptRefs: [{name: prologs}]
  epilogScriptRefs: [{name: epilogs}]
  prologSlurmctldScriptRefs: [{name: ctld-scripts}]
  epilogSlurmctldScriptRefs: [{name: ctld-scripts}]
`}, add: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: extra-conf}
data:
  cgroup.conf: "CgroupPlugin=autodetect\n"
  gres.conf: "AutoDetect=nvidia\n"
  topology.yaml: "- topology: default\n"
---
apiVersion: v1
kind: ConfigMap
metadata: {name: prologs}
data: {10-prolog.sh: "#!/bin/sh\n", 20-prolog.sh: "#!/bin/sh\n"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: epilogs}
data: {epilog.sh: "#!/bin/sh\n"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ctld-scripts}
data: {ctld.sh: "#!/bin/sh\n"}
`}},
	// The commented examples of the v1.2.1 chart's values.yaml (controller
	// extraConfMap, configFiles, the four script maps, partitions.all),
	// rendered by hand as its templates render them
	// (templates/controller/_helpers.tpl, controller-cr.yaml).
	{name: "chart values.yaml examples", patch: map[string]string{ctl: `
spec:
  extraConf: |-
    AccountingStorageTRES=gres/gpu
    GresTypes=gpu
    JobAcctGatherType=jobacct_gather/cgroup
    MinJobAge=2
    ProctrackType=proctrack/cgroup
    PrologFlags=Contain
    PartitionName=all Nodes=ALL Default=YES MaxTime=UNLIMITED
  configFileRefs: [{name: slurm-config-extra}]
  prologScriptRefs: [{name: slurm-prolog-scripts}]
  epilogScriptRefs: [{name: slurm-epilog-scripts}]
  prologSlurmctldScriptRefs: [{name: slurm-prolog-slurmctld-scripts}]
  epilogSlurmctldScriptRefs: [{name: slurm-epilog-slurmctld-scripts}]
`}, add: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: slurm-config-extra}
data:
  cgroup.conf: |
    CgroupPlugin=cgroup/v2
    IgnoreSystemd=yes
    ConstrainCores=yes
    ConstrainRAMSpace=yes
    ConstrainDevices=yes
    ConstrainSwapSpace=yes
  gres.conf: |
    AutoDetect=Full
  mpi.conf: |
    PMIxDebug=0
---
apiVersion: v1
kind: ConfigMap
metadata: {name: slurm-prolog-scripts}
data: {00-empty.sh: "#!/usr/bin/env bash\nset -euo pipefail\nexit 0\n"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: slurm-epilog-scripts}
data: {00-empty.sh: "#!/usr/bin/env bash\nset -euo pipefail\nexit 0\n"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: slurm-prolog-slurmctld-scripts}
data: {00-empty.sh: "#!/usr/bin/env bash\nset -euo pipefail\nexit 0\n"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: slurm-epilog-slurmctld-scripts}
data: {00-empty.sh: "#!/usr/bin/env bash\nset -euo pipefail\nexit 0\n"}
`}},
	{name: "controller cgroup disabled", patch: map[string]string{ctl: `
spec:
  configFileRefs: [{name: no-cgroup}]
  extraConf: |
    ProctrackType=proctrack/linuxproc
    TaskPlugin=task/affinity
    JobAcctGatherType=jobacct_gather/linux
`}, add: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: no-cgroup}
data: {cgroup.conf: "CgroupPlugin=disabled\n"}
`}},
	{name: "controller metrics and ServiceMonitor", patch: map[string]string{ctl: `
spec:
  metrics:
    enabled: true
    serviceMonitor: {enabled: true, interval: 30s, scrapeTimeout: 25s, endpoints: null, labels: {release: prom}}
`}},
	{name: "controller ServiceMonitor endpoints", patch: map[string]string{ctl: `
spec:
  metrics:
    enabled: true
    serviceMonitor:
      enabled: true
      interval: 60s
      endpoints:
      - {path: /metrics/jobs, interval: 10s}
      - {path: /metrics/nodes, scrapeTimeout: 5s}
`}},
	{name: "controller persistence off", patch: map[string]string{ctl: `
spec:
  persistence: {enabled: false}
`}},
	{name: "controller existing claim", patch: map[string]string{ctl: `
spec:
  persistence: {enabled: true, existingClaim: slurmctld-state}
`}},
	{name: "controller jwks and cluster name", patch: map[string]string{ctl: `
spec:
  clusterName: hpc
  jwksKeyRef: {name: jwks, key: jwks.json}
`}, add: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: jwks}
data: {jwks.json: "{}"}
`}},
	{name: "controller service", patch: map[string]string{ctl: `
spec:
  service:
    metadata:
      labels: {exposed: "yes"}
      annotations: {example.com/lb: internal}
    spec: {type: NodePort}
    port: 16817
    nodePort: 30817
`}},
	{name: "controller inplaceReconfigure", patch: map[string]string{ctl: `
spec:
  inplaceReconfigure: true
`}},
	{name: "controller pod template", patch: map[string]string{ctl: `
spec:
  slurmctld:
    args: [-vvv]
    resources: {requests: {cpu: "1", memory: 1Gi}}
    env: [{name: SLURMCTLD_OPTIONS, value: "-vvv"}]
  template:
    metadata:
      annotations: {example.com/scrape: "true"}
    spec:
      tolerations: [{key: control, operator: Exists}]
      priorityClassName: system-cluster-critical
`}},
	{name: "external controller", patch: map[string]string{ctl: `
spec:
  external: true
  externalConfig: {host: slurmctld.example.com, port: 6817}
`}},

	// RestApi.
	{name: "restapi overrides", patch: map[string]string{ra: `
spec:
  replicas: 2
  slurmrestd:
    env: [{name: SLURMRESTD_DEBUG, value: debug}]
    args: [-vv]
    resources: {limits: {memory: 1Gi}}
  service:
    spec: {type: LoadBalancer}
    port: 443
  template:
    spec:
      nodeSelector: {pool: system}
`}},
	{name: "restapi without accounting", patch: map[string]string{ctl: `
spec:
  accountingRef: null
`}},

	// LoginSet.
	{name: "loginset fields", patch: map[string]string{ls: `
spec:
  replicas: 3
  rootSshAuthorizedKeys: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOq4 root@example\n"
  extraSshdConfig: |
    MaxSessions 20
    Match Group admins
      X11Forwarding no
  strategy: {type: Recreate}
  login:
    env: [{name: LANG, value: C.UTF-8}]
    resources: {limits: {cpu: "2"}}
  service:
    spec: {type: NodePort}
    port: 2222
    nodePort: 32222
`}},
	{name: "sshd defaults the user sets", patch: map[string]string{ls: `
spec:
  extraSshdConfig: |
    X11Forwarding no
    Subsystem sftp /usr/lib/openssh/sftp-server
`, ns: `
spec:
  ssh:
    enabled: true
    sssdConfRef: {name: slurm-sssd-conf, key: sssd.conf}
    extraSshdConfig: |
      AuthenticationMethods publickey
`}},
	{name: "loginset host network port", patch: map[string]string{ls: `
spec:
  login:
    ports: [{name: login, containerPort: 2022}]
  template:
    spec: {hostNetwork: true}
`}},

	{name: "restapi args without accounting", patch: map[string]string{ctl: `
spec:
  accountingRef: null
`, ra: `
spec:
  slurmrestd:
    args: [-vv]
`}},

	// Every kind.
	{name: "annotations on every CR", patch: map[string]string{
		ctl:  "metadata: {annotations: {example.com/owner: team-a}}",
		ns:   "metadata: {annotations: {example.com/owner: team-a}}",
		ra:   "metadata: {annotations: {example.com/owner: team-a}}",
		ls:   "metadata: {annotations: {example.com/owner: team-a}}",
		acct: "metadata: {annotations: {example.com/owner: team-a}}",
	}},
	{name: "service externalIPs", patch: map[string]string{
		ctl:  "spec: {service: {spec: {externalIPs: [192.0.2.10]}}}",
		ra:   "spec: {service: {spec: {externalIPs: [192.0.2.11]}}}",
		ls:   "spec: {service: {spec: {externalIPs: [192.0.2.12]}}}",
		acct: "spec: {service: {spec: {externalIPs: [192.0.2.13]}}}",
	}},

	// Accounting.
	{name: "accounting password and no user", patch: map[string]string{acct: `
spec:
  storageConfig:
    username: null
    passwordKeyRef: {name: db-pass, key: pw}
`}, add: []string{`
apiVersion: v1
kind: Secret
metadata: {name: db-pass}
stringData: {pw: "pa#ss\\word"}
`}},
	{name: "accounting extraConf and jwks", patch: map[string]string{acct: `
spec:
  jwksKeyRef: {name: jwks, key: jwks.json}
  extraConf: |
    PurgeJobAfter=12months
    AuthAltParameters=disable_token_creation
`}, add: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: jwks}
data: {jwks.json: "{}"}
`}},
	{name: "accounting storage and service", patch: map[string]string{acct: `
spec:
  storageConfig: {host: db.example.com, port: 3307, database: acct}
  service:
    spec: {type: NodePort}
    port: 16819
  template:
    spec:
      nodeSelector: {pool: system}
  slurmdbd:
    resources: {requests: {cpu: 500m}}
`}},
	{name: "accounting external", patch: map[string]string{acct: `
spec:
  external: true
  externalConfig: {host: slurmdbd.example.com, port: 6819}
`}},
}
