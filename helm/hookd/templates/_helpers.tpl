{{/* Names, labels and shared checks of the hookd chart. */}}

{{- define "hookd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hookd.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hookd.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hookd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hookd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hookd.labels" -}}
helm.sh/chart: {{ include "hookd.chart" . }}
{{ include "hookd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hookd
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "hookd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hookd.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "hookd.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "hookd.authSecretName" -}}
{{- default (printf "%s-auth" (include "hookd.fullname" .)) .Values.auth.existingSecret }}
{{- end }}

{{/*
The mode rules, checked by every workload template: sled keeps its store
on one pod's volume, so it cannot be shared by replicas.
*/}}
{{- define "hookd.validate" -}}
{{- if eq .Values.storage.backend "sled" }}
{{- if gt (int .Values.replicaCount) 1 }}
{{- fail (printf "replicaCount=%d: the sled backend keeps its data on one pod's volume and runs exactly one replica; for more replicas use PostgreSQL: set storage.backend=postgres and storage.postgres.existingSecret" (int .Values.replicaCount)) }}
{{- end }}
{{- if .Values.autoscaling.enabled }}
{{- fail "autoscaling.enabled: the sled backend runs exactly one replica and cannot scale; for autoscaling use PostgreSQL: set storage.backend=postgres and storage.postgres.existingSecret" }}
{{- end }}
{{- else }}
{{- if not .Values.storage.postgres.existingSecret }}
{{- fail "storage.postgres.existingSecret is required with storage.backend=postgres: a Secret holding the connection URL under storage.postgres.urlKey (default \"url\")" }}
{{- end }}
{{- end }}
{{- if and .Values.grpc.tls.enabled (not .Values.grpc.tls.existingSecret) }}
{{- fail "grpc.tls.existingSecret is required with grpc.tls.enabled: a Secret with tls.crt and tls.key (and ca.crt for grpc.tls.clientAuth)" }}
{{- end }}
{{- if and .Values.http.tls.enabled (not .Values.http.tls.existingSecret) }}
{{- fail "http.tls.existingSecret is required with http.tls.enabled: a Secret with tls.crt and tls.key" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" }}
{{- end }}
{{- end }}

{{/* Port name and number Prometheus scrapes. */}}
{{- define "hookd.metricsPort" -}}
{{- if .Values.metrics.listener.enabled }}{{ .Values.metrics.listener.port }}{{ else }}{{ .Values.http.port }}{{ end }}
{{- end }}

{{/*
One TOML value from a values tree: strings JSON-quoted (valid TOML basic
strings), integral numbers as integers (YAML numbers arrive as floats and
hookd's integer keys refuse 300.0), lists as arrays, maps as inline tables.
*/}}
{{- define "hookd.tomlValue" -}}
{{- $v := . }}
{{- if kindIs "string" $v }}{{ toJson $v }}
{{- else if kindIs "bool" $v }}{{ $v }}
{{- else if or (kindIs "float64" $v) (kindIs "int64" $v) (kindIs "int" $v) }}
{{- if eq (float64 (int64 $v)) (float64 $v) }}{{ int64 $v }}{{ else }}{{ $v }}{{ end }}
{{- else if kindIs "slice" $v }}[{{ range $i, $e := $v }}{{ if $i }}, {{ end }}{{ include "hookd.tomlValue" $e }}{{ end }}]
{{- else if kindIs "map" $v }}{ {{- range $i, $k := keys $v | sortAlpha }}{{ if $i }},{{ end }} {{ toJson $k }} = {{ include "hookd.tomlValue" (index $v $k) }}{{ end }} }
{{- else }}{{ fail (printf "tenants: %v has no TOML form (null?)" $v) }}
{{- end }}
{{- end }}

{{/*
The PromQL label matchers of this release's hookd series: the job and
namespace the chart's ServiceMonitor gives them, unless
prometheusRule.selector says otherwise.
*/}}
{{- define "hookd.ruleSelector" -}}
{{- default (printf "job=\"%s-metrics\",namespace=\"%s\"" (include "hookd.fullname" .) .Release.Namespace) .Values.prometheusRule.selector }}
{{- end }}

{{/*
One alerting rule of the PrometheusRule, or nothing when its entry under
prometheusRule.alerts is disabled: dict ctx (the root), alert (its name),
cfg (its values), expr, summary and description.
*/}}
{{- define "hookd.rule" -}}
{{- if .cfg.enabled -}}
- alert: {{ .alert }}
  expr: |-
    {{- .expr | nindent 4 }}
  for: {{ .cfg.for }}
  labels:
    severity: {{ .cfg.severity }}
    {{- with .ctx.Values.prometheusRule.extraLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    summary: {{ .summary | quote }}
    description: {{ .description | quote }}
    runbook_url: {{ printf "%s#%s" (default "docs/observability.md" .ctx.Values.prometheusRule.runbookBaseUrl) (lower .alert) | quote }}
{{ end -}}
{{- end }}
