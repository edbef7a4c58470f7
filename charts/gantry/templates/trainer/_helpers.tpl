{{- /* What the Kubeflow SDK and its users need beside the trainer CRDs:
Trainer's public ConfigMap and the user-facing roles. All of it comes only
with the trainjob controller, like the shipped ClusterTrainingRuntimes. */ -}}

{{- /* The Kubeflow Trainer release whose API Gantry serves, in the form
Trainer's chart publishes its own version ("v" + chart version, helper
trainer.version). hack/check-chart.sh compares it with the Trainer module
test/tools/trainer builds. */ -}}
{{- define "gantry.trainer.compatibleVersion" -}}
v2.3.0
{{- end -}}

{{- define "gantry.trainer.publicConfigMap.enabled" -}}
{{- if and .Values.trainjob.publicConfigMap.enabled (include "gantry.controllerEnabled" (list . "trainjob")) -}}true{{- end -}}
{{- end -}}

{{- define "gantry.trainer.publicConfigMap.namespace" -}}
{{- default .Release.Namespace .Values.trainjob.publicConfigMap.namespace -}}
{{- end -}}

{{- define "gantry.trainer.userRoles.enabled" -}}
{{- if and .Values.rbac.create .Values.trainjob.userRoles.enabled (include "gantry.controllerEnabled" (list . "trainjob")) -}}true{{- end -}}
{{- end -}}

{{- define "gantry.trainer.publicClusterRuntimes.enabled" -}}
{{- if and .Values.rbac.create .Values.trainjob.publicClusterRuntimes.enabled (include "gantry.controllerEnabled" (list . "trainjob")) -}}true{{- end -}}
{{- end -}}

{{- /* Read access to the trainer kinds. ClusterTrainingRuntimes are
cluster-scoped: the rule takes effect only where the role is bound cluster-wide
(a ClusterRoleBinding of view); trainjob.publicClusterRuntimes grants it to
every user. */ -}}
{{- define "gantry.trainer.rules.read" -}}
- apiGroups:
  - trainer.kubeflow.org
  resources:
  - trainjobs
  - trainjobs/status
  - trainingruntimes
  - clustertrainingruntimes
  verbs:
  - get
  - list
  - watch
{{- end -}}

{{- /* Submitting TrainJobs and following them: the SDK's train(), delete_job(),
get_job() (the job's Pods) and get_job_logs(). */ -}}
{{- define "gantry.trainer.rules.edit" -}}
{{ include "gantry.trainer.rules.read" . }}
- apiGroups:
  - trainer.kubeflow.org
  resources:
  - trainjobs
  verbs:
  - create
  - delete
  - deletecollection
  - patch
  - update
- apiGroups:
  - ""
  resources:
  - pods
  - pods/log
  - events
  verbs:
  - get
  - list
  - watch
{{- end -}}

{{- /* A namespace's admin also owns its TrainingRuntimes. */ -}}
{{- define "gantry.trainer.rules.admin" -}}
{{ include "gantry.trainer.rules.edit" . }}
- apiGroups:
  - trainer.kubeflow.org
  resources:
  - trainingruntimes
  verbs:
  - create
  - delete
  - deletecollection
  - patch
  - update
{{- end -}}
