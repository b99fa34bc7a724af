// ncclscope alert rules. Need the recording rules of ncclscope-recording.yml loaded too.
// Every alert names the NCCL job (`ncclscope_job`), and where the series has them the communicator (`comm`),
// the rank inside it (`rank`), the `host` and the `global_rank`, and says what to do next.
// Stalled communicators whose job has not yet waited longer than it is known to come through
// (ncclscope:hang_page_after_seconds of the hang rules: pauses are not hangs). Empty without the hang rules.
local withinPause =
  '(ncclscope:hang_comm_seconds <= on (ncclscope_job) group_left ncclscope:hang_page_after_seconds)';
// '5m' -> '5 minutes', as the annotations say it.
local words(d) =
  local n = std.parseInt(std.substr(d, 0, std.length(d) - 1));
  local unit = { s: 'second', m: 'minute', h: 'hour' }[d[std.length(d) - 1]];
  '%d %s%s' % [n, unit, if n == 1 then '' else 's'];
{
  alerts(c):: {
    // Alerts over long windows or with a long `for` (every rank x communicator over 10-15 minutes, the costliest
    // alert queries at scale) run at c.slowAlertsInterval; the rest at c.alertsInterval. A rule marked `slow::`
    // joins them too (an arm of an alert that reads every rank for a minutes-old condition).
    local slow = ['NcclscopeRankDown', 'NcclscopeRankMissing', 'NcclscopeCommDroppedEvents', 'NcclscopeHangDetectionBlind',
                  'NcclscopeProfilerDroppedEvents'],
    local isSlow(r) = std.member(slow, r.alert) || std.objectHasAll(r, 'slow'),
    groups: [
      {
        name: "ncclscope.alerts",
        interval: c.alertsInterval,
        rules: std.filter(function(r) !isSlow(r), all),
      },
      {
        name: "ncclscope.alerts.slow",
        interval: c.slowAlertsInterval,
        rules: std.filter(isSlow, all),
      },
      {
        name: "ncclscope.links",
        interval: c.nicDegradedInterval,
        rules: [nicDegraded, nicFlapping],
      },
    ],
    // Events per second of each NIC over the window, one series per host and NIC: an RDMA port's retransmission
    // and error counters (the host's, from the rank that speaks for it: max over ranks, never a sum, in case two
    // did), or, on hosts without RDMA ports, the retransmissions of the ranks' TCP connections over an interface
    // (max over the host's ranks). `nic` is the RDMA device or the interface; `port` the RDMA port ("" for TCP).
    local rdmaRate(family) =
      'max by (ncclscope_job, host, device, port) (sum without (counter) (rate(%s%s[%s])))' % [family, c.sel, c.nicDegradedWindow],
    local retransmits = rdmaRate('ncclscope_host_rdma_port_retransmit_events_total'),
    local errors = rdmaRate('ncclscope_host_rdma_port_error_events_total'),
    // Hosts with RDMA ports: their ports' counters speak for the links; the process's TCP connections there
    // (bootstrap, the launcher's) share the RoCE interfaces and would name the same fault twice.
    local rdmaHosts = 'group by (ncclscope_job, host) (ncclscope_host_rdma_port_rate_bytes_per_second%s or ncclscope_host_rdma_port_bytes_total%s)' % [c.sel, c.sel],
    local nicEvents = |||
      max by (ncclscope_job, host, nic, port) (
        label_replace(
          (%(retransmits)s + on (ncclscope_job, host, device, port) %(errors)s)
          or %(retransmits)s or %(errors)s,
          "nic", "$1", "device", "(.*)")
        or
        label_replace(max by (ncclscope_job, host, nic) (rate(ncclscope_nic_tcp_retransmits_total%(sel)s[%(nicDegradedWindow)s])),
          "port", "", "", "")
        unless on (ncclscope_job, host) %(rdmaHosts)s
      )
    ||| % c { retransmits: retransmits, errors: errors, rdmaHosts: rdmaHosts },
    // The job's seconds per collective over the window against its average before the fault.
    local jobSlowed = |||
      sum by (ncclscope_job) (rate(ncclscope_operation_duration_seconds_sum{kind="coll"%(selc)s}[%(nicDegradedWindow)s]))
      / (sum by (ncclscope_job) (rate(ncclscope_operation_duration_seconds_count{kind="coll"%(selc)s}[%(nicDegradedWindow)s])) > 0)
      > %(nicSlowdownFactor)s * avg_over_time(ncclscope:job_seconds_per_op:rate[%(nicHistory)s] offset %(nicHistoryOffset)s)
      and on (ncclscope_job) count_over_time(ncclscope:job_seconds_per_op:rate[%(nicHistory)s] offset %(nicHistoryMinAge)s)
    ||| % c,
    // A degraded link below the ranks: a NIC that loses or damages traffic (retransmissions, errors) while its
    // job's collectives slow down against their own recent history. It names the host and the NIC, one alert per
    // host and NIC, only NICs near the job's busiest (the two ends of one bad cable may both count as much, and so
    // both be named; the far end of a one-sided fault retransmits far less), and inhibits the
    // straggler and NIC-error alerts of that host in that job (deploy/alertmanager). A stuck link is a hang
    // (NcclscopeHang class link); a slow one is this.
    local nicDegraded = {
      alert: "NcclscopeNicDegraded",
      expr: |||
        (%(nicEvents)s > %(nicDegradedEventsPerSecond)s)
        >= on (ncclscope_job) group_left
        %(nicDegradedDominance)s * max by (ncclscope_job) (%(nicEvents)s)
        and on (ncclscope_job)
        (%(jobSlowed)s)
      ||| % c { nicEvents: std.stripChars(nicEvents, '\n'), jobSlowed: std.stripChars(jobSlowed, '\n') },
      labels: {'severity': 'warning'},
      annotations: {
        summary: std.join(' ', [
          "NIC {{ $labels.nic }}{{ if $labels.port }} port {{ $labels.port }}{{ end }} on {{ $labels.host }}",
          "slows job {{ $labels.ncclscope_job }}: {{ $value | printf \"%.1f\" }} retransmissions and errors per second",
        ]),
        description: std.join(' ', [
          "NIC {{ $labels.nic }}{{ if $labels.port }} port {{ $labels.port }}{{ end }} on host {{ $labels.host }}",
          "counts {{ $value | printf \"%.1f\" }} retransmission and error events per second while the",
          "collectives of job {{ $labels.ncclscope_job }} take more than " + c.nicSlowdownFactor + " times",
          "their average of the " + words(c.nicHistory) + " before: a lossy cable, a flapping or",
          "congested port, or a link retrained to a lower speed. Next step: the counters by name",
          "(ncclscope_host_rdma_port_retransmit_events_total and _error_events_total at",
          "NCCLSCOPE_METRICS_LEVEL=detailed, or ncclscope_nic_tcp_retransmits_total), the port's rate",
          "(ncclscope_host_rdma_port_rate_bytes_per_second against its peers'), and the switch port at",
          "the other end of the cable.",
        ]),
      },
    },
    // Link downs of each NIC within the window, one series per host and NIC: an RDMA port's link_downed counter
    // (a series that appears at the port's first link down below the detailed level: its appearance within the
    // window counts), or, on hosts without RDMA ports, an interface's carrier changes (a down and an up count two:
    // halved).
    local linkDowns = |||
      max by (ncclscope_job, host, nic, port) (
        label_replace(
          increase(ncclscope_host_rdma_port_link_downs_total%(sel)s[%(nicFlapWindow)s]) > 0
          or (ncclscope_host_rdma_port_link_downs_total%(sel)s unless ncclscope_host_rdma_port_link_downs_total%(sel)s offset %(nicFlapWindow)s),
          "nic", "$1", "device", "(.*)")
        or
        label_replace(label_replace(increase(ncclscope_host_netdev_carrier_changes_total%(sel)s[%(nicFlapWindow)s]) / 2,
          "nic", "$1", "netdev", "(.*)"), "port", "", "", "")
        unless on (ncclscope_job, host) %(rdmaHosts)s
      )
    ||| % c { rdmaHosts: rdmaHosts },
    // A flapping link: a NIC whose link went down (and came back) while its job's collectives slowed. Retransmissions
    // alone miss it (a link down for 2 s in every 6 costs TCP a few retransmissions, an RDMA port none), so the
    // link's own state changes name it. While the link stays down nothing completes and NcclscopeHang (class link)
    // names it; this fires once traffic moves again, slower. It inhibits NcclscopeNicDegraded of that NIC and the
    // straggler and NIC-error alerts of that host in that job (deploy/alertmanager).
    local nicFlapping = {
      alert: "NcclscopeNicFlapping",
      expr: |||
        (%(linkDowns)s > 0)
        and on (ncclscope_job)
        (%(jobSlowed)s)
      ||| % c { linkDowns: std.stripChars(linkDowns, '\n'), jobSlowed: std.stripChars(jobSlowed, '\n') },
      labels: {'severity': 'warning'},
      annotations: {
        summary: std.join(' ', [
          "NIC {{ $labels.nic }}{{ if $labels.port }} port {{ $labels.port }}{{ end }} on {{ $labels.host }}",
          "is flapping and slows job {{ $labels.ncclscope_job }}: {{ $value | printf \"%.0f\" }} link down(s) in",
          words(c.nicFlapWindow),
        ]),
        description: std.join(' ', [
          "The link of NIC {{ $labels.nic }}{{ if $labels.port }} port {{ $labels.port }}{{ end }} on host",
          "{{ $labels.host }} went down {{ $value | printf \"%.0f\" }} time(s) in the last",
          words(c.nicFlapWindow) + " and came back, while the collectives of job {{ $labels.ncclscope_job }}",
          "take more than " + c.nicSlowdownFactor + " times their average of the " + words(c.nicHistory) + " before:",
          "a loose or dirty cable or transceiver, or a switch port resetting. Next step: the kernel log of the",
          "host (link down/up messages of that interface or port), the switch port's log at the other end of",
          "the cable; reseat or replace the cable or transceiver; drain the host if it keeps flapping.",
        ]),
      },
    },
    // NcclscopeCommStalled's name, `for`, labels and annotations; its two arms (below) add the expression.
    local commStalled = {
      alert: "NcclscopeCommStalled",
      'for': c.stalledFor,
      labels: {'severity': 'critical'},
      annotations: {
        summary: std.join(' ', [
          "NCCL communicator {{ $labels.comm }} stalled on rank {{ $labels.rank }} (host",
          "{{ $labels.host }}, global rank {{ $labels.global_rank }}, job {{ $labels.ncclscope_job }})",
        ]),
        description: std.join(' ', [
          "Rank {{ $labels.rank }} of communicator {{ $labels.comm }} (host {{ $labels.host }}, global",
          "rank {{ $labels.global_rank }}, job {{ $labels.ncclscope_job }}) has had an operation in",
          "flight for {{ $value | humanizeDuration }} without completing: a collective or a send/recv",
          "waiting for a peer. Next step: the rank that has not joined is named by the",
          "NcclscopeCommRankNotJoining alert (or the largest ncclscope:comm_rank_seq_lag of this",
          "communicator on the dashboard); look at that process (py-spy dump / gdb), and read the",
          "stall dump ncclscope wrote under NCCLSCOPE_DUMP_DIR for this rank.",
        ]),
      },
    },
    local all = [
          // A rank has waited too long for the operation it is in, and the hang rules (ncclscope-hang.yml) name no
          // culprit for its communicator (they are not loaded, or nobody can be named). The stall watch flags it
          // past the adaptive threshold (docs/stall-detection.md), and a flagged rank exports where it waits and for
          // how long (ncclscope_comm_wait_seconds, read here instead of every rank's flag).
          commStalled {
            expr: |||
              max without (class, func, peer_global_rank, peer_host, peer_rank, nic, direction, state) (
                ncclscope_comm_wait_seconds%(sel)s
              )
              unless on (ncclscope_job, comm) ncclscope:hang_culprit
              unless on (ncclscope_job, comm) %(withinPause)s
            ||| % c { withinPause: withinPause },
          },
          // The same alert for an oldest in-flight operation older than 5 minutes that the stall watch did not flag
          // (it cannot see the communicator's completions, or its cap was raised past 5 minutes). It reads every
          // rank x communicator for a condition minutes old, so it runs with the slow alerts. Label flagged="false"
          // tells the two apart (and keeps the rules distinct for promtool's duplicate check).
          commStalled {
            slow:: true,
            labels+: {flagged: 'false'},
            expr: |||
              ncclscope_comm_oldest_in_flight_age_seconds%(sel)s > %(stallOldestOperationSeconds)s
              unless on (ncclscope_job, comm, rank) ncclscope_comm_wait_seconds%(sel)s
              unless on (ncclscope_job, comm) ncclscope:hang_culprit
              unless on (ncclscope_job, comm) %(withinPause)s
            ||| % c { withinPause: withinPause },
          },
          // The rank the stalled communicator waits for: behind its peers in the sequence of operations while some
          // rank of the communicator is stalled (coll: collectives issued; p2p: sends/receives started).
          {
            alert: "NcclscopeCommRankNotJoining",
            expr: |||
              ncclscope:comm_rank_seq_lag > %(seqLagMin)s
              and on (ncclscope_job, comm) group by (ncclscope_job, comm) (ncclscope_comm_wait_last_seq%(sel)s)
              unless on (ncclscope_job, comm) ncclscope:hang_culprit
              unless on (ncclscope_job, comm) %(withinPause)s
            ||| % c { withinPause: withinPause },
            'for': c.stalledFor,
            labels: {'severity': 'critical'},
            annotations: {
              summary: std.join(' ', [
                "Rank {{ $labels.rank }} (host {{ $labels.host }}, global rank {{ $labels.global_rank }}) is",
                "{{ $value }} {{ $labels.kind }} operation(s) behind on stalled communicator",
                "{{ $labels.comm }}",
              ]),
              description: std.join(' ', [
                "Communicator {{ $labels.comm }} of job {{ $labels.ncclscope_job }} is stalled and rank",
                "{{ $labels.rank }} (host {{ $labels.host }}, global rank {{ $labels.global_rank }}) has",
                "issued {{ $value }} fewer {{ $labels.kind }} operations than the furthest rank: the others",
                "are waiting for it. Next step: dump the Python and native stacks of global rank",
                "{{ $labels.global_rank }} on {{ $labels.host }} (py-spy dump --native, gdb) to see where it",
                "stopped issuing NCCL calls.",
              ]),
            },
          },
          // An ncclscope HTTP target found through file_sd does not answer while other ranks of its job still do:
          // the process died, hangs hard or the host is gone. One alert per communicator the rank was in during
          // the last 15 minutes. (An exited rank's target stays for NCCLSCOPE_OUTPUT_GRACE_S, down; a job that
          // ended everywhere raises nothing.) The down targets are grouped before the `and`: a comparison leaves the
          // series it fails as empty ones in VictoriaMetrics, and only an empty right side spares it the 15-minute
          // read of every rank's communicators (the hang rules' gates, docs/scaling.md).
          {
            alert: "NcclscopeRankDown",
            expr: |||
              (
                (
                  max_over_time(ncclscope_comm_info%(sel)s[%(rankMemory)s])
                  and on (job, instance) group by (job, instance) (up{ncclscope_job!=""%(selc)s} == 0)
                )
                or on (job, instance)
                (up{ncclscope_job!=""%(selc)s} == 0)
              )
              and on (ncclscope_job) (sum by (ncclscope_job) (up{ncclscope_job!=""%(selc)s}) > 0)
            ||| % c,
            'for': c.rankDownFor,
            labels: {'severity': 'critical'},
            annotations: {
              summary: std.join(' ', [
                "ncclscope target of global rank {{ $labels.global_rank }} on {{ $labels.host }} is down",
                "(job {{ $labels.ncclscope_job }}{{ if $labels.comm }}, communicator {{ $labels.comm }} rank",
                "{{ $labels.rank }}{{ end }})",
              ]),
              description: std.join(' ', [
                "Prometheus cannot scrape {{ $labels.instance }}: global rank {{ $labels.global_rank }} on",
                "host {{ $labels.host }} of job {{ $labels.ncclscope_job }}{{ if $labels.comm }}",
                "(communicator {{ $labels.comm }}, rank {{ $labels.rank }}){{ end }}. Next step: check",
                "whether the process still exists on {{ $labels.host }} (scheduler log, dmesg for OOM kills",
                "or Xid errors); if it is alive, its metrics endpoint is blocked: take a stack dump.",
              ]),
            },
          },
          // A rank's communicator stopped reporting while the other ranks of that communicator still report it:
          // the rank exited, crashed, or destroyed the communicator alone. (Targets that are down are
          // NcclscopeRankDown; a job that ended everywhere raises nothing.) A down target is matched to its
          // series by (job, instance), the labels of the scrape: under prometheus-operator `up` has no global_rank.
          // Read only for communicators where fewer ranks report than their nranks label says: that gate reads the
          // current series; the 15-minute read of every rank's communicators is then skipped in VictoriaMetrics while
          // none is missing (where a shard holds part of a job's ranks the gate always passes, at the old cost).
          {
            alert: "NcclscopeRankMissing",
            expr: |||
              group by (ncclscope_job, comm, rank, host, global_rank) (
                max_over_time(ncclscope_comm_info%(sel)s[%(rankMemory)s])
                unless on (job, instance) (up{ncclscope_job!=""%(selc)s} == 0)
              )
              unless on (ncclscope_job, comm, rank) ncclscope_comm_info%(sel)s
              and on (ncclscope_job, comm)
              group by (ncclscope_job, comm) (
                count_values by (ncclscope_job, comm) ("nranks",
                  count by (ncclscope_job, comm) (group by (ncclscope_job, comm, rank) (ncclscope_comm_info%(sel)s)))
                unless on (ncclscope_job, comm, nranks) ncclscope_comm_info%(sel)s
              )
            ||| % c,
            'for': c.rankMissingFor,
            labels: {'severity': 'critical'},
            annotations: {
              summary: std.join(' ', [
                "Rank {{ $labels.rank }} of communicator {{ $labels.comm }} (host {{ $labels.host }}, global",
                "rank {{ $labels.global_rank }}) no longer reports while its peers do",
              ]),
              description: std.join(' ', [
                "ncclscope series of communicator {{ $labels.comm }} rank {{ $labels.rank }} (host",
                "{{ $labels.host }}, global rank {{ $labels.global_rank }}, job {{ $labels.ncclscope_job }})",
                "are gone but other ranks of the communicator still report it. Next step: check whether",
                "global rank {{ $labels.global_rank }} on {{ $labels.host }} still runs (scheduler, dmesg,",
                "core files); if it does, check its ncclscope output (NCCLSCOPE_PROM_TEXTFILE_DIR or the",
                "HTTP endpoint) and its log for errors.",
              ]),
            },
          },
          // The rank the communicator waits for in every collective: its lateness (how much shorter its
          // collectives are than the slowest rank's) is above 1 ms and above a quarter of the communicator's
          // time per collective, for 5 minutes.
          {
            alert: "NcclscopeStraggler",
            expr: |||
              (ncclscope:comm_straggler:rate > %(stragglerMinSeconds)s)
              and
              (
                ncclscope:comm_straggler:rate
                > on (ncclscope_job, comm) group_left
                %(stragglerFraction)s * ncclscope:comm_seconds_per_op_max:rate
              )
            ||| % c,
            'for': c.stragglerFor,
            labels: {'severity': 'warning'},
            annotations: {
              summary: std.join(' ', [
                "Rank {{ $labels.rank }} (host {{ $labels.host }}, global rank {{ $labels.global_rank }})",
                "holds up communicator {{ $labels.comm }} by {{ $value | humanizeDuration }} per collective",
              ]),
              description: std.join(' ', [
                "In communicator {{ $labels.comm }} of job {{ $labels.ncclscope_job }} the other ranks wait",
                "{{ $value | humanizeDuration }} per collective for rank {{ $labels.rank }} (host",
                "{{ $labels.host }}, global rank {{ $labels.global_rank }}), more than a quarter of the",
                "collective's time. Next step: compare that rank's compute (GPU clocks, throttling and ECC",
                "in the DCGM dashboard for its gpu_uuid), its CPU and data loading, and its NIC counters",
                "with its peers'.",
              ]),
            },
          },
          // The NIC reports errors (all kinds summed; by kind at the detailed level).
          {
            alert: "NcclscopeNicErrors",
            expr: "sum without (kind) (increase(ncclscope_nic_errors_total%(sel)s[%(nicErrorWindow)s])) > 0" % c,
            'for': c.nicErrorsFor,
            labels: {'severity': 'warning'},
            annotations: {
              summary: std.join(' ', [
                "NIC {{ $labels.nic }} on {{ $labels.host }} (global rank {{ $labels.global_rank }}) has",
                "{{ $value | printf \"%.0f\" }} error(s) in " + words(c.nicErrorWindow),
              ]),
              description: std.join(' ', [
                "ncclscope counted {{ $value | printf \"%.0f\" }} network errors on NIC {{ $labels.nic }} of",
                "global rank {{ $labels.global_rank }} on {{ $labels.host }} (job",
                "{{ $labels.ncclscope_job }}); every communicator of that rank using the NIC is affected.",
                "Next step: the kind label of ncclscope_nic_errors_total (NCCLSCOPE_METRICS_LEVEL=detailed)",
                "says which error; compare with the port counters of node_exporter (node_infiniband_* for",
                "device {{ $labels.nic }}: symbol errors, link downed, port receive errors) and check the",
                "cable and switch port.",
              ]),
            },
          },
          // ncclscope dropped profiler events of a communicator: its metrics under-count from now on.
          {
            alert: "NcclscopeCommDroppedEvents",
            expr: "sum without (reason) (increase(ncclscope_comm_dropped_events_total%(sel)s[%(droppedEventsWindow)s])) > 0" % c,
            labels: {'severity': 'warning'},
            annotations: {
              summary: std.join(' ', [
                "ncclscope dropped {{ $value | printf \"%.0f\" }} profiler event(s) of communicator",
                "{{ $labels.comm }} rank {{ $labels.rank }} (host {{ $labels.host }}, global rank",
                "{{ $labels.global_rank }})",
              ]),
              description: std.join(' ', [
                "Communicator {{ $labels.comm }} rank {{ $labels.rank }} (host {{ $labels.host }}, global",
                "rank {{ $labels.global_rank }}, job {{ $labels.ncclscope_job }}) lost profiler events in",
                "the last " + words(c.droppedEventsWindow) + ", so its operation counts, durations and bandwidth under-count. Next",
                "step: the reason label (NCCLSCOPE_METRICS_LEVEL=detailed) says why; narrow",
                "NCCLSCOPE_EVENT_MASK to the events the metrics need, and report it with the ncclscope log",
                "of that rank.",
              ]),
            },
          },
          // Communicators on which a hang cannot be seen: no KernelCh events (ncclscope's default mask on NCCL 2.31)
          // and no ncclscope connection, so their operations look done once enqueued. One alert per job.
          {
            alert: "NcclscopeHangDetectionBlind",
            expr: 'count by (ncclscope_job) (ncclscope_comm_completion_seen{by="none"%(selc)s} == 1) > 0' % c,
            'for': c.hangBlindFor,
            labels: {'severity': 'info'},
            annotations: {
              summary: std.join(' ', [
                "ncclscope cannot see a hang on {{ $value | printf \"%.0f\" }} communicator rank(s) of job",
                "{{ $labels.ncclscope_job }}",
              ]),
              description: std.join(' ', [
                "{{ $value | printf \"%.0f\" }} communicator rank(s) of job {{ $labels.ncclscope_job }} have no",
                "KernelCh events in their event mask and no ncclscope connection (NCCL's own transports, or",
                "ranks on one node): their operations count as done once enqueued, so a hang there raises",
                "neither NcclscopeHang nor NcclscopeCommStalled. Next step: to see every hang, set",
                "NCCLSCOPE_EVENT_MASK=0x46 for this job (KernelCh costs GPU time on NCCL 2.31:",
                "docs/stall-detection.md); otherwise silence this alert for the job, knowingly.",
              ]),
            },
          },
          // ncclscope dropped profiler events that belonged to no communicator it knows.
          {
            alert: "NcclscopeProfilerDroppedEvents",
            expr: "sum without (reason) (increase(ncclscope_profiler_dropped_events_total%(sel)s[%(droppedEventsWindow)s])) > 0" % c,
            labels: {'severity': 'warning'},
            annotations: {
              summary: std.join(' ', [
                "ncclscope dropped {{ $value | printf \"%.0f\" }} profiler event(s) outside any communicator",
                "on {{ $labels.host }} (global rank {{ $labels.global_rank }})",
              ]),
              description: std.join(' ', [
                "The ncclscope profiler of global rank {{ $labels.global_rank }} on {{ $labels.host }} (job",
                "{{ $labels.ncclscope_job }}) dropped events it could not attribute to a communicator (comm",
                "and rank unknown) in the last " + words(c.droppedEventsWindow) + ". Next step: the reason label",
                "(NCCLSCOPE_METRICS_LEVEL=detailed) says why; check the NCCL and ncclscope versions in",
                "ncclscope_build_info against the supported ABI and report it with the rank's ncclscope log.",
              ]),
            },
          },
    ],
  },
}
