{{/*
The repositories spec images may come from, as a JSON list: admission.imageRepositories, the
sleuth image's and the default vLLM image's (the operator allows its own images the same way).
*/}}
{{- define "sleuth.allowedRepositories" -}}
{{- $repos := concat (list .Values.image.repository) .Values.admission.imageRepositories -}}
{{- with .Values.modelImage -}}
{{- $repos = append $repos (include "sleuth.repositoryOf" .) -}}
{{- end -}}
{{- toJson (uniq $repos) -}}
{{- end -}}

{{/* An image reference without its tag and digest. */}}
{{- define "sleuth.repositoryOf" -}}
{{- regexReplaceAll "(:[^:/]*)?(@.*)?$" . "" -}}
{{- end -}}
