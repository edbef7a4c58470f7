{{- define "gantry.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gantry.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "gantry.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gantry.labels" -}}
app.kubernetes.io/name: {{ include "gantry.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "gantry.image" -}}
{{- with .Values.image -}}
{{ .repository }}{{ if .digest }}@{{ .digest }}{{ else }}:{{ .tag | default $.Chart.AppVersion }}{{ end }}
{{- end -}}
{{- end -}}

{{- define "gantry.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gantry.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{- /* The manager never runs as the namespace's "default" ServiceAccount:
with serviceAccount.create=false the name must be given. */ -}}
{{- define "gantry.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gantry.fullname" .) .Values.serviceAccount.name -}}
{{- else if .Values.serviceAccount.name -}}
{{- .Values.serviceAccount.name -}}
{{- else -}}
{{- fail "serviceAccount.create=false needs serviceAccount.name: the ServiceAccount the manager runs as (the chart never falls back to the namespace's \"default\" ServiceAccount); bind it to the chart's roles with rbac.create=true or grant the same rules yourself" -}}
{{- end -}}
{{- end -}}

{{- /* "true" when the workload controller (raycluster, trainjob, slurm) named
by the second list element is in .Values.controllers, or "all" is. */ -}}
{{- define "gantry.controllerEnabled" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- if or (has "all" $root.Values.controllers) (has $name $root.Values.controllers) -}}true{{- end -}}
{{- end -}}

{{- /* "true" when the chart runs in namespaced mode (watchNamespaces set). */ -}}
{{- define "gantry.namespaced" -}}
{{- if .Values.watchNamespaces -}}true{{- end -}}
{{- end -}}

{{- /* CRDs: crds.install, then crds.<group> = true | false | "auto" (installed
when the group's controller is enabled). */ -}}
{{- define "gantry.crds.enabled" -}}
{{- $root := index . 0 -}}
{{- $group := index . 1 -}}
{{- $controller := get (dict "ray" "raycluster" "trainer" "trainjob" "slinky" "slurm") $group -}}
{{- $want := index $root.Values.crds $group -}}
{{- if $root.Values.crds.install -}}
{{- if kindIs "bool" $want -}}
{{- if $want -}}true{{- end -}}
{{- else if eq (toString $want) "auto" -}}
{{- include "gantry.controllerEnabled" (list $root $controller) -}}
{{- else -}}
{{- fail (printf "crds.%s must be true, false or \"auto\", not %v" $group $want) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gantry.crds.annotations" -}}
{{- if .Values.crds.keep -}}
helm.sh/resource-policy: keep
{{- end -}}
{{- end -}}

{{- /* ClusterTrainingRuntimes: only with the trainjob controller. Helm maps
every object of a release to its API before creating any, so it cannot
create a ClusterTrainingRuntime in the release step that creates its CRD.
The chart renders them into a ConfigMap (runtimes/configmap.yaml) and the
manager applies them (--trainjob-runtimes-configmap): one `helm install`. */ -}}
{{- define "gantry.runtimes.wanted" -}}
{{- if and .Values.trainingRuntimes.install (include "gantry.controllerEnabled" (list . "trainjob")) -}}true{{- end -}}
{{- end -}}

{{- define "gantry.runtimes.configMapName" -}}
{{- include "gantry.fullname" . }}-training-runtimes
{{- end -}}

{{- /* A shipped runtime's image (second element) after
trainingRuntimes.imageOverrides (exact) and imageRegistry (the first path
element is replaced when it names a registry, otherwise prefixed). */ -}}
{{- define "gantry.runtimeImage" -}}
{{- $v := (index . 0).Values.trainingRuntimes -}}
{{- $image := index . 1 -}}
{{- $overrides := default dict $v.imageOverrides -}}
{{- if hasKey $overrides $image -}}
{{- index $overrides $image -}}
{{- else if $v.imageRegistry -}}
{{- $parts := splitn "/" 2 $image -}}
{{- if and $parts._1 (or (contains "." $parts._0) (contains ":" $parts._0) (eq $parts._0 "localhost")) -}}
{{- $v.imageRegistry }}/{{ $parts._1 -}}
{{- else -}}
{{- $v.imageRegistry }}/{{ $image -}}
{{- end -}}
{{- else -}}
{{- $image -}}
{{- end -}}
{{- end -}}

{{- /* Webhook object names; the manager gets the same names as flags. */ -}}
{{- define "gantry.webhook.serviceName" -}}
{{- include "gantry.fullname" . }}-webhook
{{- end -}}

{{- define "gantry.webhook.secretName" -}}
{{- include "gantry.fullname" . }}-webhook-cert
{{- end -}}

{{- define "gantry.webhook.validatingConfigurationName" -}}
{{- include "gantry.fullname" . }}-validating-webhook-configuration
{{- end -}}

{{- define "gantry.webhook.mutatingConfigurationName" -}}
{{- include "gantry.fullname" . }}-mutating-webhook-configuration
{{- end -}}

{{- define "gantry.webhook.certDir" -}}
/tmp/k8s-webhook-server/serving-certs
{{- end -}}

{{- define "gantry.webhook.certManagerIssuerRef" -}}
{{- if .Values.certManager.issuerRef.name -}}
{{- toYaml .Values.certManager.issuerRef -}}
{{- else -}}
kind: Issuer
name: {{ include "gantry.fullname" . }}-selfsigned
{{- end -}}
{{- end -}}

{{- /* clientConfig of one webhook: webhook.url + path, or the Service. */ -}}
{{- define "gantry.webhook.clientConfig" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
{{- if $root.Values.webhook.url -}}
url: {{ printf "%s%s" (trimSuffix "/" $root.Values.webhook.url) $path | quote }}
{{- else -}}
service:
  name: {{ include "gantry.webhook.serviceName" $root }}
  namespace: {{ $root.Release.Namespace }}
  path: {{ $path }}
  port: 443
{{- end -}}
{{- end -}}

{{- /* In namespaced mode, webhooks for namespaced kinds see only the watched
namespaces; objects elsewhere belong to whatever else runs there. */ -}}
{{- define "gantry.webhook.namespaceSelector" -}}
{{- with .Values.watchNamespaces -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: In
    values:
      {{- toYaml . | nindent 6 }}
{{- end -}}
{{- end -}}

{{- define "gantry.webhook.annotations" -}}
{{- if .Values.certManager.enabled -}}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "gantry.webhook.secretName" . }}
{{- end -}}
{{- end -}}

{{- /* GOMEMLIMIT: 90% of resources.limits.memory in bytes, so the Go
runtime collects garbage before the kubelet kills the container. Empty
without a memory limit. */ -}}
{{- define "gantry.goMemLimit" -}}
{{- $limit := dig "limits" "memory" "" (.Values.resources | default dict) -}}
{{- if $limit -}}
{{- $bytes := 0.0 -}}
{{- if or (kindIs "float64" $limit) (kindIs "int64" $limit) (kindIs "int" $limit) -}}
{{- $bytes = float64 $limit -}}
{{- else -}}
{{- $s := toString $limit -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $s -}}
{{- $suffix := trimPrefix $num $s -}}
{{- $mult := get (dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776) $suffix -}}
{{- if or (not $num) (not $mult) -}}
{{- fail (printf "resources.limits.memory=%q: cannot derive GOMEMLIMIT from it; use a quantity like 512Mi or 1Gi, or set GOMEMLIMIT in env" $s) -}}
{{- end -}}
{{- $bytes = mulf (float64 $num) (float64 $mult) -}}
{{- end -}}
{{- printf "%d" (int64 (floor (mulf $bytes 0.9))) -}}
{{- end -}}
{{- end -}}

{{- /* "true" when the user's env already sets the variable named by the
second list element. */ -}}
{{- define "gantry.envHas" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- range $root.Values.env -}}
{{- if eq .name $name -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/*
"true" when the RayCluster controller gets KubeRay's Configuration file:
any of raycluster.headSidecarContainers, workerSidecarContainers or
defaultContainerEnvs is set. Empty otherwise.
*/}}
{{- define "gantry.raycluster.configEnabled" -}}
{{- with .Values.raycluster -}}
{{- if or .headSidecarContainers .workerSidecarContainers .defaultContainerEnvs -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* The body of KubeRay's Configuration file for the RayCluster controller. */}}
{{- define "gantry.raycluster.config" -}}
apiVersion: config.ray.io/v1alpha1
kind: Configuration
{{- with .Values.raycluster.headSidecarContainers }}
headSidecarContainers:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- with .Values.raycluster.workerSidecarContainers }}
workerSidecarContainers:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- with .Values.raycluster.defaultContainerEnvs }}
defaultContainerEnvs:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end -}}

{{/*
One scrape endpoint of a ServiceMonitor or PodMonitor ("monitor": its
values; "pod": a PodMonitor): HTTPS with a ServiceAccount token when the manager
serves metrics securely (metrics.secure), the operator's own labels kept
(honorLabels: the workload series carry the object's namespace).
*/}}
{{- define "gantry.metricsEndpoint" -}}
{{- $m := .monitor -}}
honorLabels: {{ $m.honorLabels }}
{{- with $m.interval }}
interval: {{ . }}
{{- end }}
{{- with $m.scrapeTimeout }}
scrapeTimeout: {{ . }}
{{- end }}
{{- if .root.Values.metrics.secure }}
scheme: https
{{- if .pod }}
authorization:
  {{- toYaml $m.authorization | nindent 2 }}
{{- else }}
bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
{{- end }}
{{- with $m.tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}
