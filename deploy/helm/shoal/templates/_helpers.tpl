{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "shoal.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Base name of every object: the release name (it names the cluster's resources). */}}
{{- define "shoal.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "shoal.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of the custom resources and Secrets this chart makes (not of the pods: the
     operator labels those with app.kubernetes.io/name=shoal-<component>). */}}
{{- define "shoal.labels" -}}
helm.sh/chart: {{ include "shoal.chart" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: shoal
{{- end -}}

{{/* Image reference for a component: (dict "ctx" $ "name" "controller"). */}}
{{- define "shoal.image" -}}
{{- $img := .ctx.Values.image -}}
{{- printf "%s/shoal/%s:%s" $img.registry .name (default .ctx.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{- define "shoal.controllerName" -}}{{ include "shoal.fullname" . }}{{- end -}}

{{- define "shoal.slurmKeySecret" -}}
{{- default (printf "%s-slurm-key" (include "shoal.fullname" .)) .Values.auth.existingSlurmKeySecret -}}
{{- end -}}

{{- define "shoal.jwtKeySecret" -}}
{{- default (printf "%s-jwt-key" (include "shoal.fullname" .)) .Values.auth.existingJwtKeySecret -}}
{{- end -}}

{{/* A partial pod template, with the metrics scrape annotations merged in when asked:
     (dict "ctx" $ "template" .Values.controller.template "scrape" true). */}}
{{- define "shoal.template" -}}
{{- $t := deepCopy (default dict .template) -}}
{{- if and .scrape .ctx.Values.metrics.enabled (not .ctx.Values.metrics.serviceMonitor.enabled) -}}
{{- $meta := default dict $t.metadata -}}
{{- $ann := merge (default dict $meta.annotations) (dict "prometheus.io/scrape" "true" "prometheus.io/port" (toString .ctx.Values.controller.port) "prometheus.io/path" "/metrics") -}}
{{- $_ := set $meta "annotations" $ann -}}
{{- $_ := set $t "metadata" $meta -}}
{{- end -}}
{{- toYaml $t -}}
{{- end -}}
