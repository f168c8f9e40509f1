{{/* The pod template shared by the sled StatefulSet and the PostgreSQL Deployment. */}}

{{/* Environment of every hookd container: keys from Secrets, OpenTelemetry. */}}
{{- define "hookd.env" -}}
- name: HOOKD_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "hookd.authSecretName" . }}
      key: {{ .Values.auth.adminTokenKey }}
- name: HOOKD_MASTER_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "hookd.authSecretName" . }}
      key: {{ .Values.auth.masterKeyKey }}
{{- include "hookd.postgresEnv" . }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- with .Values.otel }}
- name: OTEL_SERVICE_NAME
  value: {{ default "hookd" .serviceName | quote }}
{{- $attrs := list "k8s.namespace.name=$(POD_NAMESPACE)" "k8s.pod.name=$(POD_NAME)" }}
{{- range $k := keys .resourceAttributes | sortAlpha }}
{{- $attrs = append $attrs (printf "%s=%s" $k (index $.Values.otel.resourceAttributes $k)) }}
{{- end }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ join "," $attrs | quote }}
{{- if .endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
{{- end }}
{{- if .sampler }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | quote }}
{{- end }}
{{- if .samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .samplerArg | quote }}
{{- end }}
{{- if .headersSecret.name }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ .headersSecret.name }}
      key: {{ .headersSecret.key }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The PostgreSQL URL, from the user's Secret (postgres mode only). */}}
{{- define "hookd.postgresEnv" -}}
{{- if eq .Values.storage.backend "postgres" }}
- name: HOOKD_STORAGE__POSTGRES__URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.storage.postgres.existingSecret }}
      key: {{ .Values.storage.postgres.urlKey }}
{{- end }}
{{- end }}

{{- define "hookd.podTemplate" -}}
metadata:
  labels:
    {{- include "hookd.selectorLabels" . | nindent 4 }}
    app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
    app.kubernetes.io/component: receiver
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "hookd.serviceAccountName" . }}
  automountServiceAccountToken: {{ .Values.serviceAccount.automountServiceAccountToken }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  terminationGracePeriodSeconds: {{ int .Values.terminationGracePeriodSeconds }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: hookd
      image: {{ include "hookd.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args: ["--config", "/etc/hookd/hookd.toml"]
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      ports:
        - name: http
          containerPort: {{ int .Values.http.port }}
          protocol: TCP
        - name: grpc
          containerPort: {{ int .Values.grpc.port }}
          protocol: TCP
        {{- if and .Values.metrics.enabled .Values.metrics.listener.enabled }}
        - name: metrics
          containerPort: {{ int .Values.metrics.listener.port }}
          protocol: TCP
        {{- end }}
      env:
        {{- include "hookd.env" . | nindent 8 }}
      {{- with .Values.extraEnvFrom }}
      envFrom:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- $scheme := ternary "HTTPS" "HTTP" .Values.http.tls.enabled }}
      startupProbe:
        httpGet: {path: /healthz, port: http, scheme: {{ $scheme }}}
        {{- toYaml .Values.startupProbe | nindent 8 }}
      livenessProbe:
        httpGet: {path: /healthz, port: http, scheme: {{ $scheme }}}
        {{- toYaml .Values.livenessProbe | nindent 8 }}
      readinessProbe:
        httpGet: {path: /readyz, port: http, scheme: {{ $scheme }}}
        {{- toYaml .Values.readinessProbe | nindent 8 }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/hookd/hookd.toml
          subPath: hookd.toml
          readOnly: true
        - name: data
          mountPath: {{ .Values.storage.dataDir }}
        - name: tmp
          mountPath: /tmp
        {{- if .Values.grpc.tls.enabled }}
        - name: grpc-tls
          mountPath: /etc/hookd/tls/grpc
          readOnly: true
        {{- end }}
        {{- if .Values.http.tls.enabled }}
        - name: http-tls
          mountPath: /etc/hookd/tls/http
          readOnly: true
        {{- end }}
        {{- with .Values.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "hookd.fullname" . }}
    - name: tmp
      emptyDir: {}
    {{- if eq .Values.storage.backend "postgres" }}
    - name: data
      emptyDir: {}
    {{- end }}
    {{- if .Values.grpc.tls.enabled }}
    - name: grpc-tls
      secret:
        secretName: {{ .Values.grpc.tls.existingSecret }}
        defaultMode: 0440
    {{- end }}
    {{- if .Values.http.tls.enabled }}
    - name: http-tls
      secret:
        secretName: {{ .Values.http.tls.existingSecret }}
        defaultMode: 0440
    {{- end }}
    {{- with .Values.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
