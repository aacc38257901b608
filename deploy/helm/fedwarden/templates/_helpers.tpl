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

{{/*
Drift notifications (.Values.notifications), for the controller-manager and
the agent alike: the --notify-* and --console-url arguments, one "- arg" line
each; the mounts and the volumes of the webhooks' CA and of the webhooks file.
Each may render nothing.
*/}}
{{- define "fedwarden.notify.args" -}}
{{- $notify := .Values.notifications }}
{{- $notifyOn := or $notify.webhooks $notify.webhooksSecret }}
{{- $notifyCA := and $notifyOn $notify.caSecret }}
{{- $notifyFile := and $notifyOn $notify.webhooksSecret }}
{{- if $notifyOn }}
# Drift notifications: one --notify-webhook per sink, the URL
# then its filter terms, separated by spaces.
{{- range $w := $notify.webhooks }}
{{- $hook := list (required "notifications.webhooks[].url is required" $w.url) }}
{{- range $term, $key := dict "namespace" "namespaces" "kind" "kinds" "cluster" "clusters" "state" "states" "remediation" "remediations" }}
{{- with get $w $key }}
{{- $hook = append $hook (printf "%s=%s" $term (join "," .)) }}
{{- end }}
{{- end }}
- {{ printf "--notify-webhook=%s" (join " " $hook) | quote }}
{{- end }}
{{- if $notifyFile }}
- --notify-webhooks-file=/etc/fedwarden/notify-webhooks/webhooks
{{- end }}
- --notify-queue-size={{ $notify.queueSize | int }}
- {{ printf "--notify-timeout=%v" $notify.timeout | quote }}
- --notify-attempts={{ $notify.attempts | int }}
{{- if $notify.caSecret }}
- --notify-ca-file=/etc/fedwarden/notify-ca/ca.crt
{{- end }}
{{- end }}
{{- with $notify.consoleURL }}
- {{ printf "--console-url=%s" . | quote }}
{{- end }}
{{- end }}

{{- define "fedwarden.notify.mounts" -}}
{{- $notify := .Values.notifications }}
{{- $notifyOn := or $notify.webhooks $notify.webhooksSecret }}
{{- $notifyCA := and $notifyOn $notify.caSecret }}
{{- $notifyFile := and $notifyOn $notify.webhooksSecret }}
{{- if $notifyCA }}
- name: notify-ca
  mountPath: /etc/fedwarden/notify-ca
  readOnly: true
{{- end }}
{{- if $notifyFile }}
- name: notify-webhooks
  mountPath: /etc/fedwarden/notify-webhooks
  readOnly: true
{{- end }}
{{- end }}

{{- define "fedwarden.notify.volumes" -}}
{{- $notify := .Values.notifications }}
{{- $notifyOn := or $notify.webhooks $notify.webhooksSecret }}
{{- $notifyCA := and $notifyOn $notify.caSecret }}
{{- $notifyFile := and $notifyOn $notify.webhooksSecret }}
{{- if $notifyCA }}
# The CA certificates of the notification webhooks (ca.crt).
- name: notify-ca
  secret:
    secretName: {{ $notify.caSecret | quote }}
    items:
      - key: ca.crt
        path: ca.crt
    defaultMode: 0440
{{- end }}
{{- if $notifyFile }}
# The notification webhooks (key webhooks: one a line, as
# --notify-webhook takes them), kept out of the arguments.
- name: notify-webhooks
  secret:
    secretName: {{ $notify.webhooksSecret | quote }}
    items:
      - key: webhooks
        path: webhooks
    defaultMode: 0440
{{- end }}
{{- end }}
