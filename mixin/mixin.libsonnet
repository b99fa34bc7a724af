// ncclscope's monitoring mixin: Prometheus rules and the Grafana dashboard from one set of parameters
// (config.libsonnet), in the shape kubernetes-mixin and node-mixin have, so kube-prometheus and mixtool take it as
// they take those:
//   prometheusAlerts:   {groups: [...]}  the alert groups, and the hang groups (alerts with their own recording
//                                        rules, which must run in the same group, in order, at the scrape interval)
//   prometheusRules:    {groups: [...]}  the recording rules the alerts and the dashboard read
//   grafanaDashboards:  {'ncclscope-overview.json': {...}}
//   _config:            the parameters; override with `mixin + {_config+:: {scrapeIntervalSeconds: 30}}`
// scripts/gen-mixin.sh writes rules/, dashboards/ and deploy/kubernetes/prometheusrule.yaml from generate.jsonnet.
local alerts = import 'rules/alerts.libsonnet';
local hang = import 'rules/hang.libsonnet';
local recording = import 'rules/recording.libsonnet';
local overview = import 'dashboards/overview.libsonnet';

// Every alert gets a runbook_url: the runbook page's anchor for it (docs/runbook.md).
local withRunbooks(file, c) = file {
  groups: [
    g { rules: [
      if std.objectHas(r, 'alert')
      then r { annotations+: { runbook_url: c.runbookBaseUrl + '#' + std.asciiLower(r.alert) } }
      else r
      for r in g.rules
    ] }
    for g in file.groups
  ],
};

(import 'config.libsonnet') + {
  local m = self,
  local c = self._config,
  // The groups of each shipped rule file (rules/ncclscope-<name>.yml), for generate.jsonnet.
  ruleFiles:: {
    recording: recording.recording(c) {
      groups+: if c.legacyRecordingNames then recording.legacy(c).groups else [],
    },
    alerts: withRunbooks(alerts.alerts(c), c),
    hang: withRunbooks(hang.hang(c), c),
  },
  prometheusRules+:: { groups+: m.ruleFiles.recording.groups },
  prometheusAlerts+:: { groups+: m.ruleFiles.alerts.groups + m.ruleFiles.hang.groups },
  grafanaDashboards+:: {
    'ncclscope-overview.json': overview.dashboard(c),
  },
}
