// The agent on every node. Settings go in _config, with the Helm chart's
// keys (deploy/helm/values.yaml), e.g.:
//   _config+:: { serviceMonitor+: { enabled: true }, cri+: { runtime: 'crio' } }
local kubenpu = import 'kubenpu/kubenpu.libsonnet';

kubenpu {
  _config+:: {},
}
