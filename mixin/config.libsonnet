// The parameters of ncclscope's rules and dashboard. Change them here, or override them without editing this file
// (docs/rules-and-dashboards.md, "Tuning"): scripts/gen-mixin.sh OUT --tla-code 'config={scrapeIntervalSeconds: 60}'
// Durations are written as Prometheus durations ('30s', '5m'); the derived ones follow scrapeIntervalSeconds.
local dur(seconds) =
  if seconds % 3600 == 0 then '%dh' % (seconds / 3600)
  else if seconds % 60 == 0 then '%dm' % (seconds / 60)
  else '%ds' % seconds;
{
  _config+:: {
    // Which series are ncclscope's: a label matcher added to every raw ncclscope series (and `up`) the rules and the
    // dashboard read. By default none: every series of ncclscope's metric names, and the `up` of targets with an
    // `ncclscope_job` label, whatever Prometheus' scrape `job` (plain scrape configs and prometheus-operator alike).
    // Where other jobs export series of the same names, set scrapeJob to the scrape job's name: the matcher is then
    // job=~"(.+/)?NAME", which matches a plain scrape config's `job_name: NAME` and prometheus-operator's
    // `<namespace>/NAME` of a PodMonitor named NAME in any namespace. Or set selector to any matcher of your own.
    scrapeJob: '',
    selector: if self.scrapeJob == '' then '' else 'job=~"(.+/)?%s"' % self.scrapeJob,

    // The scrape interval of the ncclscope targets (seconds). The rate window is at least 4 scrapes (Prometheus'
    // advice: a rate needs two samples in the window even when a scrape fails) and at least minRateWindowSeconds.
    // The hang rules evaluate once per scrape, call a target gone after two failed scrapes in a row, and remember
    // a rank's communicators for at least 4 scrapes. 5 s is what docs/stall-detection.md recommends for hang
    // detection; 15-60 s works with detection that much later.
    scrapeIntervalSeconds: 5,
    minRateWindowSeconds: 60,
    rateWindow: dur(std.max(self.minRateWindowSeconds, 4 * self.scrapeIntervalSeconds)),
    hangEvaluationInterval: dur(self.scrapeIntervalSeconds),
    hangTargetDownLookback: dur(2 * self.scrapeIntervalSeconds),
    // Two failed scrapes in a row are looked for over three intervals: a failed scrape's sample is written when it
    // times out (up to an interval after its timestamp), so a window of two intervals holds only one of them at
    // most evaluations.
    hangTargetFailedWindow: dur(3 * self.scrapeIntervalSeconds),
    // A target whose latest scrape the rules see is this much older than the newest of its job's does not answer
    // (a healthy ncclscope endpoint answers in milliseconds; a frozen one only fails at the scrape timeout, up to 4 s
    // later). An interval plus the spread of the delays between a scrape and the rules seeing it (under 3 s measured).
    hangScrapeOverdueSeconds: self.scrapeIntervalSeconds + 3,
    hangCommMemory: dur(std.max(120, 4 * self.scrapeIntervalSeconds)),
    // The progress comparison (the costliest query at scale) runs at most this often.
    hangProgressInterval: dur(std.max(15, self.scrapeIntervalSeconds)),
    // The recording group (rates over the rate window, for the dashboard and the straggler alert) and the alerts over
    // windows of 10-15 minutes read every rank x communicator: they run this often, not once per scrape (once per
    // rate window: at 16,384 ranks x 8 a recording evaluation took 18 s of a 2-core engine, docs/scaling.md).
    recordingInterval: dur(std.max(60, self.scrapeIntervalSeconds)),
    // The other alerts (for: 30 s and more; the hang rules give the early answer) run at least every 15 s.
    alertsInterval: dur(std.max(15, self.scrapeIntervalSeconds)),
    slowAlertsInterval: dur(std.max(60, self.scrapeIntervalSeconds)),

    // Alert thresholds.
    stallOldestOperationSeconds: 300,  // NcclscopeCommStalled without the stall watch's flag
    stalledFor: '30s',  // NcclscopeCommStalled, NcclscopeCommRankNotJoining
    seqLagMin: 0,  // NcclscopeCommRankNotJoining: operations behind the furthest rank, more than this
    rankDownFor: '1m',
    rankMissingFor: '2m',
    rankMemory: '15m',  // how long a rank's communicators are remembered for NcclscopeRankDown/RankMissing
    stragglerMinSeconds: 0.001,  // NcclscopeStraggler: lateness per collective above this ...
    stragglerFraction: 0.25,  // ... and above this fraction of the communicator's seconds per collective
    stragglerFor: '5m',
    nicErrorWindow: '5m',  // NcclscopeNicErrors: any error within this window
    // NcclscopeNicErrors waits this long: a process that died or froze breaks its peers' connections at once, and
    // the hang rules need a few scrapes to name it (NcclscopeHang class process), which then inhibits these symptoms
    // in Alertmanager (deploy/alertmanager) whatever its group_wait.
    nicErrorsFor: dur(std.max(30, 3 * self.scrapeIntervalSeconds)),
    droppedEventsWindow: '10m',  // NcclscopeCommDroppedEvents, NcclscopeProfilerDroppedEvents
    hangBlindFor: '10m',  // NcclscopeHangDetectionBlind: communicators that cannot show a hang, this long
    // NcclscopeNicDegraded: a NIC (an RDMA port, or the TCP transport's interface) counting more than
    // nicDegradedEventsPerSecond retransmission and error events per second over nicDegradedWindow, while its job's
    // seconds per collective over that window exceed nicSlowdownFactor times their average over the nicHistory
    // before nicHistoryOffset (the job's own recent history, before the fault). It runs every nicDegradedInterval
    // in a group of its own: once per scrape (every 10 s, a lossy soft-RoCE link was named after 19.6-20.7 s).
    nicDegradedWindow: dur(std.max(20, 4 * self.scrapeIntervalSeconds)),
    nicDegradedInterval: dur(self.scrapeIntervalSeconds),
    nicDegradedEventsPerSecond: 1,
    // ... and at least this fraction of the job's busiest NIC's rate: the NIC at the fault, not the far end whose
    // acknowledgements it lost (a link rate-limited on one side: 100 retransmissions per second there, 2 here).
    nicDegradedDominance: 0.25,
    nicSlowdownFactor: 1.5,
    // NcclscopeNicFlapping: a link down within this window (the RDMA port's link_downed, the interface's carrier
    // changes) while the job's collectives slow down as above.
    nicFlapWindow: '2m',
    nicHistory: '15m',
    nicHistoryOffset: '2m',
    // ... once the job's pace was first recorded at least this long ago: a history of one early sample is no
    // baseline (seen: a soft-RoCE test job whose first minute ran faster than the rest, on links whose emulation
    // retransmits 2 times a second when healthy, raised the alert the moment its history began).
    nicHistoryMinAge: '4m',

    // Pauses are not hangs (docs/stall-detection.md, "Pauses"). NcclscopeHang names the culprit within seconds at
    // hangEarlySeverity, which does not page; NcclscopeHangPage pages once the culprit has been stuck longer than
    // hangPageMinSeconds and than hangPageFactor times the longest wait this NCCL job has come through in the last
    // hangPauseMemory (a checkpoint save, an evaluation before a barrier), for hangPageFor. NcclscopeHangResumed
    // says, for hangResumedShownFor, that a named hang ended by itself and how long it lasted.
    hangEarlySeverity: 'warning',
    hangPageSeverity: 'critical',
    hangPageMinSeconds: 300,
    hangPageFactor: 1.5,
    hangPauseMemory: '6h',
    hangPageFor: dur(2 * self.scrapeIntervalSeconds),
    hangResumedShownFor: '10m',

    // Where each alert's runbook_url points: this URL plus '#' and the alert name in lower case (docs/runbook.md
    // has one anchor per alert). Point it at your copy: a wiki, or the file in your repository browser.
    runbookBaseUrl: 'file:///usr/share/ncclscope/docs/runbook.md',

    // Migration aid: also record the recording rules' old names, whose window changed with the scrape interval
    // (ncclscope:comm_straggler:rate1m, now ncclscope:comm_straggler:rate; docs/rules-and-dashboards.md lists them),
    // in a group ncclscope.recording.legacy, until the queries of a site read the new names.
    legacyRecordingNames: false,

    // deploy/kubernetes/prometheusrule.yaml: the PrometheusRule object's name and labels (a Prometheus resource
    // loads the PrometheusRules its ruleSelector matches; kube-prometheus' matches any).
    prometheusRuleName: 'ncclscope',
    prometheusRuleLabels: { 'app.kubernetes.io/name': 'ncclscope' },

    // Dashboard.
    dashboardUid: 'ncclscope-overview',
    dcgmDashboardUid: 'Oxed_c6Wz',  // NVIDIA's dcgm-exporter dashboard (grafana.com 12239) as imported
    perRankTopk: 10,  // per-rank panels plot the top this many ranks (the default of the topk variable)
    // The GPU table joins on dcgm-exporter's series of this metric (labels: the UUID label, instance, gpu) to link
    // each rank's GPU to the DCGM dashboard's instance and gpu variables. dcgm-exporter's -u option names the label.
    dcgmJoinMetric: 'DCGM_FI_DEV_GPU_TEMP',
    dcgmUuidLabel: 'UUID',

    // Derived: the selector inside a matcher list ({a="b"%(selc)s}) and alone (metric%(sel)s).
    sel: if self.selector == '' then '' else '{' + self.selector + '}',
    selc: if self.selector == '' then '' else ', ' + self.selector,
  },
}
