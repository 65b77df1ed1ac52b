{{/*
Named templates of the sleuth chart. Every name is prefixed "sleuth.".
*/}}

{{/* The chart name, overridable. */}}
{{- define "sleuth.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The full name of the release's objects: "<release>-sleuth", or the release name when it
already contains the chart name. */}}
{{- define "sleuth.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The operator's objects: "<fullname>-operator". */}}
{{- define "sleuth.operatorName" -}}
{{- printf "%s-operator" (include "sleuth.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The chart label value. */}}
{{- define "sleuth.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The immutable selector labels of the operator's pods. */}}
{{- define "sleuth.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sleuth.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* The app.kubernetes.io labels every object of the chart carries (the one helper). */}}
{{- define "sleuth.labels" -}}
{{ include "sleuth.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: sleuth
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "sleuth.chart" . }}
{{- end -}}

{{/* The ServiceAccount the operator runs as. */}}
{{- define "sleuth.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sleuth.operatorName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The operator's image reference, pinned by digest when one is given. */}}
{{- define "sleuth.operatorImage" -}}
{{- $repo := .Values.operator.image.repository -}}
{{- if .Values.operator.image.digest -}}
{{- printf "%s@%s" $repo .Values.operator.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.operator.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The sleuth (workload) image reference, pinned by digest when one is given. */}}
{{- define "sleuth.image" -}}
{{- $repo := .Values.image.repository -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repo .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* "true" when the operator watches only .Values.watchNamespaces. */}}
{{- define "sleuth.namespaced" -}}
{{- if .Values.watchNamespaces -}}true{{- end -}}
{{- end -}}

{{/*
The RBAC rules of the operator inside a namespace: exactly the verbs it uses.
- sleuth.dev kinds: watched and read; patched by kopf (its finalizer, for the timers) and
  status written with a merge patch.
- children (Deployments, Services, ConfigMaps, NetworkPolicies): watched (label-filtered),
  read, server-side applied (patch; create when new), pruned (delete); an agent's
  PodDisruptionBudget (more than one replica) is applied and pruned the same way, not watched.
- Events: created (conditions' transitions).
- Pods: listed by label while a child Deployment is not ready, for the scheduler's reason
  (PodScheduled=False) in the owner's condition; never read one by one, watched or changed.
- EvalSchedule children: CronJobs (watched like the others) and PrometheusRules (applied and
  pruned; the API group is only read to see whether it is served); the eval pods' ServiceAccount,
  Role and RoleBinding (applied and pruned). The apiserver lets the operator create a Role only
  with permissions it holds itself, and bind only such Roles: get on evalschedules and get +
  patch on evalschedules/status (hence "get" on the status) -- so it can grant nothing more.
*/}}
{{- define "sleuth.namespacedRules" -}}
- apiGroups: ["sleuth.dev"]
  resources: ["agentdeployments", "toolbindings", "evalschedules"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["sleuth.dev"]
  resources: ["agentdeployments/status", "toolbindings/status"]
  verbs: ["patch"]
- apiGroups: ["sleuth.dev"]
  resources: ["evalschedules/status"]
  verbs: ["get", "patch"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services", "configmaps"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["batch"]
  resources: ["cronjobs"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["monitoring.coreos.com"]
  resources: ["prometheusrules"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
{{- if eq .Values.autoscaling.engine "keda" }}
- apiGroups: ["keda.sh"]
  resources: ["scaledobjects"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
{{- end }}
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
{{- end -}}

{{/* Reading Secrets by name (never list or watch): only where agents and tools live. */}}
{{- define "sleuth.secretRules" -}}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- end -}}
