{{/* The name of every object: the release's, unless it already says kubenpu. */}}
{{- define "kubenpu.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the agent's pods; never change on upgrade. */}}
{{- define "kubenpu.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kubenpu.labels" -}}
{{ include "kubenpu.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The CRI socket on the node, from the runtime preset or cri.socket. */}}
{{- define "kubenpu.criSocket" -}}
{{- $presets := dict "containerd" "/run/containerd/containerd.sock" "crio" "/run/crio/crio.sock" -}}
{{- if eq .Values.cri.runtime "custom" -}}
{{- required "cri.runtime is custom: set cri.socket to the CRI socket's path on the node" .Values.cri.socket -}}
{{- else -}}
{{- get $presets .Values.cri.runtime -}}
{{- end -}}
{{- end -}}

{{/* "true" where the policy may check anything: policy.mode is audit or
enforce, or policy.namespaces sets a namespace to one of them (the agent
attaches the checks for those namespaces with the node's mode off). */}}
{{- define "kubenpu.policyOn" -}}
{{- $on := ne .Values.policy.mode "off" -}}
{{- range $namespace, $mode := .Values.policy.namespaces -}}
{{- if ne $mode "off" -}}{{- $on = true -}}{{- end -}}
{{- end -}}
{{- if $on -}}true{{- end -}}
{{- end -}}
