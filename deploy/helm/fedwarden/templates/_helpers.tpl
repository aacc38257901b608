{{/*
The chart's name, or nameOverride.
*/}}
{{- define "fedwarden.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: fullnameOverride, else the release name
when it holds the chart's name, else "<release>-<chart>".
*/}}
{{- define "fedwarden.fullname" -}}
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

{{/*
The name of the controller-manager's objects.
*/}}
{{- define "fedwarden.controllerManager.fullname" -}}
{{- printf "%s-controller-manager" (include "fedwarden.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object but the component's.
*/}}
{{- define "fedwarden.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: fedwarden
{{- end }}

{{/*
Labels of the controller-manager's objects, and of the host objects every
agent shares.
*/}}
{{- define "fedwarden.labels" -}}
{{ include "fedwarden.commonLabels" . }}
{{ include "fedwarden.selectorLabels" . }}
{{- end }}

{{/*
Labels that select the controller-manager's pods.
*/}}
{{- define "fedwarden.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fedwarden.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller-manager
{{- end }}

{{/*
The ServiceAccount the controller-manager runs as.
*/}}
{{- define "fedwarden.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fedwarden.controllerManager.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference.
*/}}
{{- define "fedwarden.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
The name of the agent's objects in a member.
*/}}
{{- define "fedwarden.agent.fullname" -}}
{{- printf "%s-agent" (include "fedwarden.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of the agent's objects in a member.
*/}}
{{- define "fedwarden.agent.labels" -}}
{{ include "fedwarden.commonLabels" . }}
{{ include "fedwarden.agent.selectorLabels" . }}
fedwarden.io/cluster: {{ .Values.agent.clusterName | quote }}
{{- end }}

{{/*
Labels that select the agent's pods.
*/}}
{{- define "fedwarden.agent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fedwarden.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{/*
The name of the console's objects.
*/}}
{{- define "fedwarden.console.fullname" -}}
{{- printf "%s-console" (include "fedwarden.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of the console's objects.
*/}}
{{- define "fedwarden.console.labels" -}}
{{ include "fedwarden.commonLabels" . }}
{{ include "fedwarden.console.selectorLabels" . }}
{{- end }}

{{/*
Labels that select the console's pods.
*/}}
{{- define "fedwarden.console.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fedwarden.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: console
{{- end }}
