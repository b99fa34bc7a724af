// ncclscope recording rules. Load with `rule_files: [/path/to/rules/*.yml]` in prometheus.yml.
// They aggregate on ncclscope's own identity labels (docs/metrics.md): `ncclscope_job` (the NCCL job, NOT
// Prometheus's scrape `job`), `host`, `global_rank`, and per communicator `comm` (the hash) and `rank` (the rank
// inside it). Those are target labels with file_sd (NCCLSCOPE_SD_DIR) and series labels in the textfile, so
// the rules work for both. At the `detailed` level the communicator counters also carry func/algo/proto; every
// ratio sums them away first, so the rules give the same series at every level.
// The rate rules are named `...:rate`, not after their window (`...:rate1m`): the window follows the scrape interval
// (rateWindow in config.libsonnet) and a name that followed it would change under every query a site wrote.
local rateRecords = [
  'comm_rank_seconds_per_op',
  'comm_rank_lateness_seconds',
  'comm_straggler',
  'comm_seconds_per_op_max',
  'comm_bus_bandwidth_bytes_per_second',
  'job_seconds_per_op',
];
{
  // Migration aid (legacyRecordingNames): the names of releases before the stable ones, `ncclscope:X:rate<window>`,
  // recorded again from the new series in a group of their own, for queries not yet moved to the new names.
  legacy(c):: {
    groups: [{
      name: 'ncclscope.recording.legacy',
      interval: c.recordingInterval,
      rules: [
        { record: 'ncclscope:%s:rate%s' % [r, c.rateWindow], expr: 'ncclscope:%s:rate' % r }
        for r in rateRecords
      ],
    }],
  },

  recording(c):: {
    // The communicators where some rank is stalled, from the series only a stalled rank exports (one per stalled
    // communicator), not from every rank's ncclscope_comm_stalled.
    local stalledComms = "group by (ncclscope_job, comm) (ncclscope_comm_wait_last_seq%(sel)s)" % c,
    groups: [
      {
        name: "ncclscope.recording",
        interval: c.recordingInterval,
        rules: [
          // Seconds per collective of one rank: GPU/proxy-timed time inside operations (waiting for peers
          // included) over the operations completed. Communicators idle for the whole window are left out.
          {
            record: "ncclscope:comm_rank_seconds_per_op:rate",
            expr: |||
              sum without (func, algo, proto) (rate(ncclscope_comm_operation_seconds_total{kind="coll"%(selc)s}[%(rateWindow)s]))
              /
              (sum without (func, algo, proto) (rate(ncclscope_comm_operations_total{kind="coll"%(selc)s}[%(rateWindow)s])) > 0)
            ||| % c,
          },
          // Lateness: how much longer the slowest rank of the communicator spends per collective than this one.
          // A collective ends at about the same moment on every rank, so the rank the others wait for has the
          // SHORTEST duration and the LARGEST lateness. Each duration is measured on one host: no clock is
          // compared across hosts.
          {
            record: "ncclscope:comm_rank_lateness_seconds:rate",
            expr: |||
              max by (ncclscope_job, comm) (ncclscope:comm_rank_seconds_per_op:rate)
              - on (ncclscope_job, comm) group_right
              ncclscope:comm_rank_seconds_per_op:rate
            ||| % c,
          },
          // The straggler: the one rank per communicator with the largest lateness (its labels name rank, host,
          // global_rank). Zero lateness everywhere means nobody is waited for.
          {
            record: "ncclscope:comm_straggler:rate",
            expr: "topk by (ncclscope_job, comm) (1, ncclscope:comm_rank_lateness_seconds:rate)",
          },
          // The largest seconds per collective in the communicator (the straggler alert compares lateness to it).
          {
            record: "ncclscope:comm_seconds_per_op_max:rate",
            expr: "max by (ncclscope_job, comm) (ncclscope:comm_rank_seconds_per_op:rate)",
          },
          // Bus bandwidth of a communicator: bus bytes over the ranks' mean time inside collectives (as nccl-tests
          // averages the time over ranks).
          {
            record: "ncclscope:comm_bus_bandwidth_bytes_per_second:rate",
            expr: |||
              sum by (ncclscope_job, comm) (rate(ncclscope_comm_bus_bytes_total%(sel)s[%(rateWindow)s]))
              /
              (sum by (ncclscope_job, comm) (rate(ncclscope_comm_operation_seconds_total{kind="coll"%(selc)s}[%(rateWindow)s])) > 0)
            ||| % c,
          },
          // Progress lag on a stalled communicator: how many operations of a kind this rank is behind the furthest
          // rank of a communicator where some rank is stalled (coll: collectives issued; p2p: sends and receives
          // started, comparable across ranks only when every rank sends and receives alike, as a ring does). A rank
          // that stopped issuing falls behind while its peers wait in the next operation. Only ranks behind (> 0),
          // and only on stalled communicators: a healthy job's lags are the scrapes' timing, and recording them for
          // every rank x communicator x kind was the recording group's largest cost at scale (docs/scaling.md).
          // The filter comes first, so the sums and the join read the stalled communicators' series only; `sum
          // without (func)`: the `detailed` level splits collectives by func.
          {
            record: "ncclscope:comm_rank_seq_lag",
            expr: |||
              (
                max by (ncclscope_job, comm, kind) (
                  sum without (func) (ncclscope_comm_last_seq%(sel)s and on (ncclscope_job, comm) %(stalledComms)s)
                )
                - on (ncclscope_job, comm, kind) group_right
                sum without (func) (ncclscope_comm_last_seq%(sel)s and on (ncclscope_job, comm) %(stalledComms)s)
              ) > 0
            ||| % c { stalledComms: stalledComms },
          },
          // The communicator's name for legends and tables: comm_name of ncclscope_comm_info, or the hash where NCCL
          // gave the communicator no name; one series per communicator. Join with
          // `* on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name`. Every rank reports the same
          // name, so ranks 0 and 1 (either one may be down) answer it without reading every rank's info series.
          {
            record: "ncclscope:comm_name",
            expr: |||
              topk by (ncclscope_job, comm) (1,
                group by (ncclscope_job, comm, comm_name) (ncclscope_comm_info{rank=~"0|1", comm_name!=""%(selc)s})
                or on (ncclscope_job, comm)
                label_replace(group by (ncclscope_job, comm) (ncclscope_comm_info{rank=~"0|1"%(selc)s}), "comm_name", "$1", "comm", "(.*)")
              )
            ||| % c,
          },
          // Job health. Ranks reporting: processes with ncclscope loaded whose metrics Prometheus has now (one per
          // process even when it is scraped both over HTTP and through the node_exporter textfile).
          {
            record: "ncclscope:job_ranks_reporting",
            expr: "count by (ncclscope_job) (group by (ncclscope_job, host, global_rank, pid) (ncclscope_process_info%(sel)s))" % c,
          },
          // HTTP targets found through ncclscope's file_sd files, and how many of them are down now.
          {
            record: "ncclscope:job_targets",
            expr: "count by (ncclscope_job) (up{ncclscope_job!=\"\"%(selc)s})" % c,
          },
          {
            record: "ncclscope:job_targets_down",
            expr: "count by (ncclscope_job) (up{ncclscope_job!=\"\"%(selc)s}) - sum by (ncclscope_job) (up{ncclscope_job!=\"\"%(selc)s})" % c,
          },
          // Seconds per collective of the whole job, from each process's operation histogram (per rank and
          // function, fewer series than per communicator): NcclscopeNicDegraded's "own recent history".
          {
            record: "ncclscope:job_seconds_per_op:rate",
            expr: |||
              sum by (ncclscope_job) (rate(ncclscope_operation_duration_seconds_sum{kind="coll"%(selc)s}[%(rateWindow)s]))
              /
              (sum by (ncclscope_job) (rate(ncclscope_operation_duration_seconds_count{kind="coll"%(selc)s}[%(rateWindow)s])) > 0)
            ||| % c,
          },
          // Communicators with at least one rank flagged by the stall watch (0 when none; the zero from the ranks'
          // process_info, one series per rank).
          {
            record: "ncclscope:job_comms_stalled",
            expr: |||
              count by (ncclscope_job) (%(stalledComms)s)
              or
              group by (ncclscope_job) (ncclscope_process_info%(sel)s) * 0
            ||| % c { stalledComms: stalledComms },
          },
        ],
      },
    ],
  },
}
