// The agent on every node, for Tanka. `_config` has the Helm chart's
// values, with its defaults read from deploy/helm/values.yaml itself, so
// the keys and defaults cannot drift apart; `name` and `namespace` play the
// Helm release's part. deploy/helm/values.yaml explains each setting.
{
  _config:: std.parseYaml(importstr '../../../helm/values.yaml') + {
    name: 'kubenpu',
    namespace: 'kubenpu',
  },

  local c = self._config,
  local criPresets = {
    containerd: '/run/containerd/containerd.sock',
    crio: '/run/crio/crio.sock',
  },
  local socket =
    if c.cri.runtime == 'custom' then
      (if c.cri.socket != '' then c.cri.socket
       else error 'cri.runtime is custom: set cri.socket to the CRI socket\'s path on the node')
    else criPresets[c.cri.runtime],
  local socketParts = std.split(socket, '/'),
  local socketDir = std.join('/', socketParts[:std.length(socketParts) - 1]),
  local baseCapabilities = ['BPF', 'PERFMON', 'SYS_NICE'] + [x for x in c.extraCapabilities if !std.member(['BPF', 'PERFMON', 'SYS_NICE'], x)],
  local capabilities = baseCapabilities + (
    if c.fdinfo.enabled && !std.member(baseCapabilities, 'SYS_PTRACE') then ['SYS_PTRACE'] else []
  ),
  local pluginsVolume =
    if c.plugins.configMap != '' && c.plugins.image.reference != '' then
      error 'plugins: set configMap or image.reference, not both (they are the same directory)'
    else if c.plugins.configMap != '' then { name: 'plugins', configMap: { name: c.plugins.configMap } }
    else if c.plugins.image.reference != '' then {
      name: 'plugins',
      image: { reference: c.plugins.image.reference, pullPolicy: c.plugins.image.pullPolicy },
    }
    else null,
  local accelTolerations = [
    { key: key, operator: 'Exists', effect: 'NoSchedule' }
    for key in ['habana.ai/gaudi', 'qualcomm.com/qaic', 'npu.intel.com/accel']
  ],
  local tolerations = c.tolerations + (if c.accel.enabled then accelTolerations else []),
  local hostPath(name, path, type='Directory') = { name: name, hostPath: { path: path, type: type } },
  local mount(name, path, readOnly=true) = { name: name, mountPath: path } + (if readOnly then { readOnly: true } else {}),
  // Audit or enforce on the node, or in a namespace of the policy file
  // (the agent attaches the checks for it with the node's mode off).
  local policyOn = c.policy.mode != 'off'
                   || std.length([m for m in std.objectValues(c.policy.namespaces) if m != 'off']) > 0,
  local nonEmpty(key, value) = if std.length(value) > 0 then { [key]: value } else {},

  local selectorLabels = {
    'app.kubernetes.io/name': 'kubenpu',
    'app.kubernetes.io/instance': c.name,
  },
  // The chart's appVersion (line by line: jsonnet 0.18's YAML parser
  // mistakes a quoted version for a number).
  local version = [
    std.stripChars(std.splitLimit(line, ':', 1)[1], ' "')
    for line in std.split(importstr '../../../helm/Chart.yaml', '\n')
    if std.startsWith(line, 'appVersion:')
  ][0],
  local metadata = {
    name: c.name,
    namespace: c.namespace,
    labels: selectorLabels { 'app.kubernetes.io/version': version },
  },

  namespace: {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: c.namespace },
  },

  serviceAccount: {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: metadata,
    automountServiceAccountToken: false,
  },

  daemonSet: {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: metadata,
    spec: {
      selector: { matchLabels: selectorLabels },
      updateStrategy: { type: 'RollingUpdate' },
      template: {
        metadata: { labels: selectorLabels + c.podLabels } + nonEmpty('annotations', c.podAnnotations),
        spec: {
          serviceAccountName: c.name,
          automountServiceAccountToken: false,
          securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
          containers: [{
            name: 'agent',
            image: if c.image.digest != '' then '%s@%s' % [c.image.repository, c.image.digest]
            else '%s:%s' % [c.image.repository, if c.image.tag != '' then c.image.tag else version],
            imagePullPolicy: c.image.pullPolicy,
            args: [
              '--hook=' + c.agent.hook,
              '--listen=0.0.0.0:%d' % c.agent.port,
              '--cgroup-root=/host/cgroup',
              '--pin-path=/host/bpf/kubenpu',
              '--dev-root=/host/dev',
              '--cri-socket=/host/cri/' + socketParts[std.length(socketParts) - 1],
              '--series-grace=' + c.agent.seriesGrace,
              '--max-counters=%d' % c.agent.maxCounters,
            ] + (if c.agent.excludeOutsidePods then ['--exclude-outside-pods'] else [])
            + (if c.allocation.enabled then [
                 '--pod-resources-socket=/host/pod-resources/kubelet.sock',
                 '--allocation-interval=' + c.allocation.interval,
               ] + ['--cdi-dir=/host/cdi/%d' % i for i in std.range(0, std.length(c.allocation.cdiDirs) - 1)]
               else ['--no-allocation'])
            + (if policyOn then (
                 assert c.allocation.enabled : 'policy.mode needs allocation.enabled (as does a namespace in policy.namespaces set to audit or enforce): the policy rules what the allocation join classifies';
                 ['--policy=' + c.policy.mode, '--policy-lease=' + c.policy.lease, '--policy-file=/etc/kubenpu/policy/policy.yaml']
               ) else [])
            + (if c.placement.mode != 'off' then ['--placement=' + c.placement.mode] else [])
            + (if c.fdinfo.enabled then ['--fdinfo', '--fdinfo-interval=' + c.fdinfo.interval] else [])
            + (if c.energy.enabled then (
                 assert c.fdinfo.enabled : 'energy.enabled needs fdinfo.enabled: the energy above idle power is divided by the pods\' engine time, which the fdinfo reader measures';
                 ['--energy']
               ) else [])
            + c.agent.extraArgs,
            env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
            ports: [{ name: 'metrics', containerPort: c.agent.port, protocol: 'TCP' }],
            livenessProbe: { httpGet: { path: '/healthz', port: 'metrics' } },
            readinessProbe: { httpGet: { path: '/readyz', port: 'metrics' } },
            resources: c.resources,
            securityContext: {
              runAsUser: 0,
              runAsNonRoot: false,
              privileged: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'], add: capabilities },
            } + (if std.member(capabilities, 'SYS_ADMIN') then {} else { allowPrivilegeEscalation: false }),
            volumeMounts: [
              mount('sys', '/sys'),
              mount('dev', '/host/dev'),
              mount('cgroup', '/host/cgroup'),
              mount('bpffs', '/host/bpf', readOnly=false),
              mount('cri', '/host/cri'),
            ] + (if pluginsVolume != null then [mount('plugins', '/usr/lib/kubenpu/plugins')] else [])
            // The allocation join's mounts, read only.
            + (if c.allocation.enabled then [
                 // kubelet's PodResources socket: which devices each container
                 // was allocated. The socket's directory, not the socket: a
                 // restarted kubelet makes a new socket file.
                 mount('pod-resources', '/host/pod-resources'),
               ] + [
                 // CDI specs (allocation.cdiDirs[i]): the device nodes of DRA claims.
                 mount('cdi-%d' % i, '/host/cdi/%d' % i)
                 for i in std.range(0, std.length(c.allocation.cdiDirs) - 1)
               ] else [])
            // The policy file's ConfigMap, as a directory: a subPath mount
            // would never see an update; then the admission socket's
            // directory, where the node's kubenpu-oci-hook finds the agent.
            + (if policyOn then [
                 mount('policy', '/etc/kubenpu/policy'),
                 mount('admission', '/run/kubenpu', readOnly=false),
               ] else []),
          }],
          volumes: [
            hostPath('sys', '/sys'),
            hostPath('dev', '/dev'),
            hostPath('cgroup', c.cgroupRoot),
            hostPath('bpffs', c.bpffs),
            hostPath('cri', socketDir),
          ] + (if pluginsVolume != null then [pluginsVolume] else [])
          + (if c.allocation.enabled then [hostPath('pod-resources', c.allocation.kubeletRootDir + '/pod-resources')] + [
               // Made if missing (empty), so a node without DRA starts too.
               hostPath('cdi-%d' % i, c.allocation.cdiDirs[i], type='DirectoryOrCreate')
               for i in std.range(0, std.length(c.allocation.cdiDirs) - 1)
             ] else [])
          + (if policyOn then [
               { name: 'policy', configMap: { name: c.name + '-policy' } },
               hostPath('admission', '/run/kubenpu', type='DirectoryOrCreate'),
             ] else []),
        }
        + (if c.fdinfo.enabled then { hostPID: true } else {})
        + nonEmpty('priorityClassName', c.priorityClassName)
        + nonEmpty('imagePullSecrets', c.imagePullSecrets)
        + nonEmpty('nodeSelector', c.nodeSelector)
        + nonEmpty('affinity', c.affinity)
        + nonEmpty('tolerations', tolerations),
      },
    },
  },

  // The policy file the agents follow (policy.namespaces, policy.rules).
  policyFile: if !policyOn then {} else {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: metadata { name: c.name + '-policy' },
    data: {
      'policy.yaml': std.manifestYamlDoc({ namespaces: c.policy.namespaces, rules: c.policy.rules }),
    },
  },

  service: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata,
    spec: {
      selector: selectorLabels,
      ports: [{ name: 'metrics', port: c.service.port, targetPort: 'metrics', protocol: 'TCP' }],
    },
  },

  // Only the scraper reaches the agent's pods, on the metrics port.
  networkPolicy: if !c.networkPolicy.enabled then {} else {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: metadata,
    spec: {
      podSelector: { matchLabels: selectorLabels },
      policyTypes: ['Ingress'],
      ingress: [{ from: c.networkPolicy.from, ports: [{ port: 'metrics', protocol: 'TCP' }] }],
    },
  },

  // Tanka skips an empty object, as it does any object without a kind.
  serviceMonitor: if !c.serviceMonitor.enabled then {} else {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: metadata { labels+: c.serviceMonitor.labels },
    spec: {
      jobLabel: 'app.kubernetes.io/name',
      selector: { matchLabels: selectorLabels },
      endpoints: [{
        port: 'metrics',
        interval: c.serviceMonitor.interval,
        relabelings: std.parseYaml(importstr '../../../helm/files/relabelings.yaml'),
      }],
    },
  },

  prometheusRule: if !c.prometheusRule.enabled then {} else {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: metadata { labels+: c.prometheusRule.labels },
    spec: std.parseYaml(importstr '../../../helm/files/kubenpu.rules.yaml'),
  },

  grafanaDashboard: if !c.grafanaDashboard.enabled then {} else {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: metadata { name: c.name + '-dashboard', labels+: c.grafanaDashboard.labels },
    data: { 'kubenpu.json': importstr '../../../helm/files/kubenpu-dashboard.json' },
  },
}
