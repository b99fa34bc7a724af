// ncclscope's monitoring mixin: Prometheus rules and the Grafana dashboard from one set of parameters
// (config.libsonnet). scripts/gen-mixin.sh writes the files of rules/ and dashboards/ from generate.jsonnet.
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
  local c = self._config,
  prometheusRules:: {
    recording: recording.recording(c),
    alerts: withRunbooks(alerts.alerts(c), c),
    hang: withRunbooks(hang.hang(c), c),
  },
  grafanaDashboards:: {
    'ncclscope-overview.json': overview.dashboard(c),
  },
}
