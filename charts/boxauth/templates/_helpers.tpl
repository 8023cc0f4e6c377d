{{/* Names and labels shared by the chart's objects. */}}
{{- define "boxauth.fullname" -}}
{{- if contains "boxauth" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-boxauth" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "boxauth.operatorName" -}}
{{- printf "%s-operator" (include "boxauth.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "boxauth.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "boxauth.operatorName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "boxauth.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: boxauth
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "boxauth.operatorSelector" -}}
app.kubernetes.io/name: boxauth
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* The labels the operator puts on every box API pod (operator/controllers/box-manifests.ts, operator/owned.ts). */}}
{{- define "boxauth.boxSelector" -}}
app.kubernetes.io/name: boxauth
app.kubernetes.io/component: api
app.kubernetes.io/managed-by: boxauth-operator
{{- end -}}

{{- define "boxauth.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "boxauth.boxImage" -}}
{{- printf "%s:%s" (default .Values.image.repository .Values.boxImage.repository) (default (default .Chart.AppVersion .Values.image.tag) .Values.boxImage.tag) -}}
{{- end -}}

{{- define "boxauth.postgresqlName" -}}
{{- printf "%s-postgresql" (include "boxauth.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The CloudNativePG Cluster of cloudnativePg.enabled (CloudNativePG allows 50 characters), and its Pooler. */}}
{{- define "boxauth.cnpgName" -}}
{{- printf "%s-db" (include "boxauth.fullname" .) | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "boxauth.cnpgPoolerName" -}}
{{- printf "%s-pooler" (include "boxauth.cnpgName" .) -}}
{{- end -}}

{{/* The Secret and key holding the operator's DATABASE_URL. */}}
{{- define "boxauth.databaseSecret" -}}
{{- if and .Values.postgresql.enabled .Values.cloudnativePg.enabled -}}
{{- fail "postgresql.enabled and cloudnativePg.enabled both ask for the operator's database: set postgresql.enabled=false" -}}
{{- else if .Values.postgresql.enabled -}}
{{- include "boxauth.postgresqlName" . -}}
{{- else if .Values.cloudnativePg.enabled -}}
{{- printf "%s-app" (include "boxauth.cnpgName" .) -}}
{{- else -}}
{{- required "database.existingSecret is required when postgresql.enabled and cloudnativePg.enabled are false" .Values.database.existingSecret -}}
{{- end -}}
{{- end -}}

{{- define "boxauth.databaseKey" -}}
{{- if .Values.postgresql.enabled -}}DATABASE_URL{{- else if .Values.cloudnativePg.enabled -}}uri{{- else -}}{{ .Values.database.key }}{{- end -}}
{{- end -}}
