// ncclscope hang rules: who a stuck NCCL job waits for, and why, one alert per root cause.
//
// Input: ncclscope_comm_wait_seconds, exported by a rank only while its communicator is stalled (its oldest
// operation is past the adaptive threshold: docs/stall-detection.md). Its labels say where that operation waits:
// class="host" (not launched), "peer" (network requests pending towards peer_global_rank on peer_host via nic),
// "kernel" (launched, no network request pending: the GPU kernel does not finish) or "launched" (not told apart).
// The identity labels (ncclscope_job, host, global_rank) are file_sd target labels (or textfile series labels).
//
// The main group runs once per scrape interval (c.hangEvaluationInterval) whatever the global evaluation_interval,
// so with the default 5 s scrape interval an alert fires within about 15 s of the onset of a hang (2 s adaptive
// floor + one scrape + one evaluation; measured in docs/measurements.md). Where the stalled ranks cannot say whom
// they wait on, a second group compares every rank's progress every 15 s or once per scrape if slower
// (c.hangProgressInterval; the costliest query at scale). Neither depends on ncclscope-recording.yml.
//
// Classes, in priority order (a communicator gets the first that applies):
//   process    a rank that stopped answering (killed, crashed, frozen, host gone): the wait edges end at it and its
//              target's latest scrape failed or a waiting rank's connection to it failed (no earlier scrape of it
//              needed); or it stopped reporting the stalled communicator and its target failed two scrapes in a row
//              (c.hangTargetFailedWindow);
//   mismatch   a rank that waits in a different collective than most ranks of the communicator;
//   not_joined a rank others wait on that has no operation in flight there (where nobody says whom they wait on:
//              a rank behind the others with none in flight): it never issued it;
//   kernel     a rank whose operation was launched and has no network request pending, that a stalled rank waits
//              on, where every stalled rank waits in the same function: its GPU kernel does not finish;
//   link       none of the above, all nranks ranks are stalled and wait: the link with the longest wait, from the
//              rank that does not deliver (peer_global_rank) to the rank that waits for it, on its NIC.
// One series per root cause: the culprit's identity, the communicator, the class; the value is how long it is stuck.
// Targets that do not answer now: their latest scrape failed, or the one under way is overdue
// (hangScrapeOverdueSeconds; a frozen rank is named before its scrape times out). Overdue against the job's
// newest scrape the engine holds, not against the clock: a sample reaches the rules seconds after its scrape
// through agents and remote write (VictoriaMetrics: 2.5 s typical, near 5 s at worst, measured), so "7 s since
// the last scrape" was true of one target in six at any moment, while the lag between the job's own targets stays
// under 8 s (docs/measurements.md, "How late a scrape reaches the rules").
local indent(text, by) = std.join('\n', [if l == '' then l else by + l for l in std.split(text, '\n')]);
// `up` with each target's global rank, `f` applied to each selector first (a comparison, timestamp(): the samples of
// a join carry the evaluation's time, not the scrape's). file_sd targets carry global_rank; prometheus-operator's
// cannot (relabeling cannot add a pod's rank offset to its local rank), so theirs is joined on (job, instance) from
// the ranks' own series (ncclscope:target_global_rank, recorded in the progress group; empty with file_sd).
local upRanked(f) =
  f('up{ncclscope_job!="", global_rank!=""%(selc)s}') + '\nor\n'
  + f('up{ncclscope_job!="", global_rank=""%(selc)s}')
  + ' * on (job, instance) group_left (global_rank)\n'
  + '  group by (job, instance, global_rank) (ncclscope:target_global_rank)';
local targetSilent = '(\n'
  + indent(upRanked(function(up) '(' + up + ' == 0)'), '  ') + '\n'
  + '  or\n'
  + '  max by (ncclscope_job) (timestamp(up{ncclscope_job!=""%(selc)s}))\n'
  + '  - on (ncclscope_job) group_right ()\n'
  + '  (\n' + indent(upRanked(function(up) 'timestamp(' + up + ')'), '    ') + '\n  )\n'
  + '  > %(hangScrapeOverdueSeconds)s\n'
  + ')\n';
// The timestamps of each target's good scrapes, with its global rank.
local goodScrapeTimes = '(\n  (\n' + indent(upRanked(function(up) 'timestamp(' + up + ')'), '    ') + '\n  )\n'
  + '  and on (job, instance) up{ncclscope_job!=""%(selc)s} == 1\n)';
// The collectives a rank issued in a communicator.
local collsIssued = 'sum without (func) (ncclscope_comm_last_seq{kind="coll"%(selc)s})';
// The not_joined culprit of the idle rule (below), from raw series only: the alert reads it as well as the recorded
// ncclscope:hang_culprit, so an engine that sees recorded series an evaluation or two late (vmalert) fires one level
// sooner. Its precedence (a process or a mismatch of the communicator first) is applied where it is used.
local idleCulprit = |||
  group by (ncclscope_job, comm, rank, host, global_rank) (
    ncclscope_comm_idle_last_seq%(sel)s
    < on (ncclscope_job, comm) group_left max by (ncclscope_job, comm) (ncclscope_comm_wait_last_seq%(sel)s)
    or
    ncclscope_comm_idle_last_seq{by="kernel"%(selc)s}
    and on (ncclscope_job, comm, global_rank)
    label_replace(ncclscope_comm_wait_seconds{func=~"Send|Recv", peer_global_rank!=""%(selc)s},
      "global_rank", "$1", "peer_global_rank", "(.*)")
  )
  * on (ncclscope_job, comm) group_left max by (ncclscope_job, comm) (ncclscope_comm_wait_seconds%(sel)s)
|||;
// Peers whose connection already failed under a stalled rank's request (global_rank: the peer).
local peerFailed = |||
  label_replace(group by (ncclscope_job, peer_global_rank) (ncclscope_comm_wait_seconds{state="failed", peer_global_rank!=""%(selc)s}),
    "global_rank", "$1", "peer_global_rank", "(.*)")
|||;
// The process culprit (the rule below), from raw series only, for the same reason: a rank that reported the
// communicator in the last hangCommMemory and no longer does, whose target (the one its vanished series came from:
// job, instance) failed two scrapes in a row, or whose connection failed under a waiting rank's request (mapped to
// its target through its ncclscope_process_info). Matched on the target, not on global_rank: a PodMonitor's
// targets carry no global_rank (relabeling cannot compute it), their series do. The communicators' series are read
// over the window once (the costly part at scale). The value is the communicator's longest wait, also raw (not the
// recorded ncclscope:hang_comm_seconds, which vmalert would show an evaluation later).
local processCulprit = std.strReplace(|||
  group by (ncclscope_job, comm, rank, host, global_rank) (
    max_over_time(ncclscope_comm_info%(sel)s[%(hangCommMemory)s])
    unless on (ncclscope_job, comm, rank) ncclscope_comm_info%(sel)s
    and on (job, instance)
    (
      max_over_time(up{ncclscope_job!=""%(selc)s}[%(hangTargetFailedWindow)s]) == 0
      and count_over_time(up{ncclscope_job!=""%(selc)s}[%(hangTargetFailedWindow)s]) >= 2
      or
      last_over_time(ncclscope_process_info%(sel)s[%(hangCommMemory)s])
      and on (ncclscope_job, global_rank)
      PEER_FAILED
    )
  )
  * on (ncclscope_job, comm) group_left max by (ncclscope_job, comm) (ncclscope_comm_wait_seconds%(sel)s)
|||, '    PEER_FAILED\n', indent(peerFailed, '    '));
// How many stalled ranks of each communicator wait in each function (a rank in the minority waits in a collective
// the others never issue), for the two culprits below.
local funcRanks = 'count by (ncclscope_job, comm, func) (group by (ncclscope_job, comm, rank, func) (ncclscope_comm_wait_seconds%(sel)s))';
// In how many functions they wait: one before a kernel or a link is named, two or more before a mismatch.
local funcCount = 'count by (ncclscope_job, comm) (group by (ncclscope_job, comm, func) (ncclscope_comm_wait_seconds%(sel)s))';
// Communicators whose stalled ranks wait in two functions or more: a gate, the last operand of an `and` chain.
// VictoriaMetrics evaluates an `and`'s right side first and skips the left one when that is empty, as this is in a
// hang in one function (the common one), so the mismatch arms then cost one read of the wait series, not six. A
// comparison leaves its failed series in VictoriaMetrics as empty ones, which do not count as empty: the outer
// `group` drops them (docs/scaling.md, "Gates on the right").
local funcsOver1 = 'group by (ncclscope_job, comm) (' + funcCount + ' > 1)';
// The mismatch culprit (the rule below) from raw series only, as the process and idle ones: the stalled ranks
// waiting in a function fewer of them wait in than in another. The two guards after it are implied where every read
// of a query sees the same series, which VictoriaMetrics does not promise for series just created: in the live
// vmalert runs one read of a stall's first seconds saw 10 ranks and another 16, and the comparison named all 16 (a
// false mismatch beside every stuck kernel). The ranks wait in at least two functions (a stall in one function,
// the common hang, can then never read as a mismatch), and in one that fewer than half of them wait in (the
// majority of a real mismatch is held out).
local mismatchCulprit =
  '(\n  group by (ncclscope_job, comm, rank, host, global_rank, func) (ncclscope_comm_wait_seconds%(sel)s)\n'
  + '  and on (ncclscope_job, comm, func)\n  (\n    ' + funcRanks + '\n'
  + '    < on (ncclscope_job, comm) group_left max by (ncclscope_job, comm) (' + funcRanks + ')\n  )\n'
  + '  and on (ncclscope_job, comm, func)\n  (\n    ' + funcRanks + ' * 2\n'
  + '    < on (ncclscope_job, comm) group_left\n'
  + '    count by (ncclscope_job, comm) (group by (ncclscope_job, comm, rank) (ncclscope_comm_wait_seconds%(sel)s))\n  )\n'
  + '  and on (ncclscope_job, comm) ' + funcsOver1 + '\n)\n'
  + '* on (ncclscope_job, comm) group_left max by (ncclscope_job, comm) (ncclscope_comm_wait_seconds%(sel)s)\n';
// The peers stalled ranks wait on, named by global rank (as ncclscope's net half names them), as ranks of the
// communicator: global_rank and host are the peer's.
local waitedOnByGlobalRank =
  'label_replace(label_replace(\n'
  + '  group by (ncclscope_job, comm, peer_global_rank, peer_host) (ncclscope_comm_wait_seconds{class="peer", peer_global_rank!=""%(selc)s}),\n'
  + '  "global_rank", "$1", "peer_global_rank", "(.*)"), "host", "$1", "peer_host", "(.*)")';
// The kernel culprit from raw series only, for the alert: a rank stalled in its own kernel, waited on by a stalled
// rank that names it by global rank, all of them in one function, the kernel's own (the engine may read the wait
// series of one query at two moments: a mismatched rank's kernel that arrives between them must not pass for the
// one function). (A peer named by its rank in the communicator only is the recorded rule's: that mapping reads
// ncclscope_comm_info through a recorded edge.) Its last operand repeats the kernel-class wait as a gate (see
// funcsOver1): no kernel-class wait, nothing else read.
local kernelCulprit =
  'group by (ncclscope_job, comm, rank, host, global_rank) (\n'
  + '  ncclscope_comm_wait_seconds{class="kernel"%(selc)s}\n'
  + '  and on (ncclscope_job, comm, global_rank)\n' + indent(waitedOnByGlobalRank, '  ') + '\n'
  + '  and on (ncclscope_job, comm, func)\n'
  + '  (' + funcRanks + '\n    and on (ncclscope_job, comm) (' + funcCount + ' == 1))\n'
  + '  and on (ncclscope_job, comm) ncclscope_comm_wait_seconds{class="kernel"%(selc)s}\n)\n'
  + '* on (ncclscope_job, comm) group_left max by (ncclscope_job, comm) (ncclscope_comm_wait_seconds%(sel)s)\n';
// Each rank's latest good scrape in the last hangCommMemory (a subquery of `up`, one series per rank): one that
// answered after a stall began was alive during the hang, so a later failed scrape of theirs is an overloaded host,
// not a frozen process (a rank in the middle of the waits whose scrape fails loses its wait series and looks like a
// root for a while).
local lastGoodScrape =
  'max by (ncclscope_job, global_rank) (\n'
  + '  max_over_time(\n' + indent(goodScrapeTimes, '    ') + '[%(hangCommMemory)s:%(hangEvaluationInterval)s]\n  )\n'
  + ')';
// The silent-root culprit (the silent_edge rule below) from raw series, for the alert: a rank stalled ranks wait on by
// global rank, not stalled itself, whose target does not answer now and has not answered since the communicator's
// stall began (its last good scrape, from a subquery of `up`), the communicator's one such rank. A frozen rank is
// named from its overdue scrape, before the scrape fails, with no recorded level between.
local silentRoots =
  'group by (ncclscope_job, comm, global_rank, host) (\n'
  + indent(waitedOnByGlobalRank, '  ') + '\n'
  + '  unless on (ncclscope_job, comm, global_rank) ncclscope_comm_wait_seconds%(sel)s\n'
  + '  and on (ncclscope_job, global_rank)\n' + indent(targetSilent, '  ') + ')';
local silentCulprit =
  '(\n' + indent(silentRoots, '  ') + '\n'
  + '  unless on (ncclscope_job, comm, global_rank)\n  (\n' + indent(silentRoots, '    ') + ' * 0\n'
  + '    + on (ncclscope_job, global_rank) group_left\n' + indent(lastGoodScrape, '    ') + '\n'
  + '    > on (ncclscope_job, comm) group_left\n'
  + '    min by (ncclscope_job, comm) (timestamp(ncclscope_comm_wait_seconds%(sel)s) - ncclscope_comm_wait_seconds%(sel)s)\n'
  + '  )\n'
  + '  and on (ncclscope_job, comm) (count by (ncclscope_job, comm) (\n' + indent(silentRoots, '    ') + '\n  ) == 1)\n)\n'
  + '* on (ncclscope_job, comm) group_left max by (ncclscope_job, comm) (ncclscope_comm_wait_seconds%(sel)s)\n';
// The culprits of each communicator in the order of precedence (process, mismatch, not_joined, kernel, link):
// `or on (ncclscope_job, comm)` keeps a class only where no class before it names one. Each rule applies that
// order through `unless` too, but an engine that sees recorded series an evaluation late (vmalert) records two
// classes for one communicator until the later rule sees the earlier one: the alert must not show both.
local byPrecedence(arms) =
  'max without (culprit_global_rank, culprit_host, instance, job, local_rank, gpu_uuid, gpu_instance_id, rank, direction, via, from) (\n'
  + indent(std.join('\nor on (ncclscope_job, comm)\n', arms), '  ') + '\n)\n';
// A rule's precedence as a gate: its result is kept where its communicator has no culprit of an earlier class.
// The same as `unless on (ncclscope_job, comm) <earlier culprit>` for a result valued from ncclscope:hang_comm_seconds,
// but as the last operand of an `and` it lets VictoriaMetrics skip the whole rule where an earlier class already
// names the culprit (see funcsOver1), instead of evaluating it to throw it away.
local unlessEarlier(culprits) =
  'and on (ncclscope_job, comm)\n(\n  ncclscope:hang_comm_seconds\n'
  + std.join('', ['  unless on (ncclscope_job, comm) ' + c + '\n' for c in culprits]) + ')\n';
local recorded(class) = 'ncclscope:hang_culprit{class="' + class + '"}';
local withClass(expr, class) = 'label_replace(\n' + indent(expr, '  ') + ', "class", "' + class + '", "", "")';
local culprits = byPrecedence([recorded(class) for class in ['process', 'mismatch', 'not_joined', 'kernel', 'link']]);
{
  hang(c):: {
    groups: [
      {
        name: "ncclscope.hang",
        interval: c.hangEvaluationInterval,
        rules: [
          // One series per stalled rank and communicator: how long its oldest operation has been stuck.
          {
            record: "ncclscope:hang_victim",
            expr: "max by (ncclscope_job, comm, rank, host, global_rank) (ncclscope_comm_wait_seconds%(sel)s)" % c,
          },
          // Stalled communicators: the longest wait among their ranks.
          {
            record: "ncclscope:hang_comm_seconds",
            expr: "max by (ncclscope_job, comm) (ncclscope:hang_victim)" % c,
          },
          // When the stall began at the latest (Unix seconds): a rank's state scraped before it says nothing about
          // the hang (ranks are scraped at different moments within the interval).
          {
            record: "ncclscope:hang_comm_since",
            expr: "min by (ncclscope_job, comm) (timestamp(ncclscope_comm_wait_seconds%(sel)s) - ncclscope_comm_wait_seconds%(sel)s)" % c,
          },
          // Who waits on whom: one series per (stalled rank, peer) pair, the peer's identity in culprit_global_rank
          // and culprit_host (direction and NIC kept); via="net" from the net half's connections, which name the
          // peer process.
          {
            record: "ncclscope:hang_wait_edge",
            expr: |||
              max without (class, func, state, peer_global_rank, peer_host, peer_rank) (
                label_replace(label_replace(ncclscope_comm_wait_seconds{class="peer", peer_global_rank!=""},
                  "culprit_global_rank", "$1", "peer_global_rank", "(.*)"),
                  "culprit_host", "$1", "peer_host", "(.*)")
              )
            ||| % c,
            labels: {'via': 'net'},
          },
          // The same from entries that name the peer by its rank in the communicator only (a send/recv's peer, or the
          // peers of unfinished ProxyOp events with NCCL's own transports): its identity from its ncclscope_comm_info.
          {
            record: "ncclscope:hang_wait_edge",
            expr: |||
              max without (class, func, state, peer_global_rank, peer_host, peer_rank, victim_rank) (
                label_replace(
                  label_replace(
                    label_replace(ncclscope_comm_wait_seconds{class="peer", peer_global_rank="", peer_rank!=""},
                      "victim_rank", "$1", "rank", "(.*)"),
                    "rank", "$1", "peer_rank", "(.*)")
                  * on (ncclscope_job, comm, rank) group_left (culprit_global_rank, culprit_host)
                  label_replace(label_replace(
                    group by (ncclscope_job, comm, rank, global_rank, host) (ncclscope_comm_info%(sel)s),
                    "culprit_global_rank", "$1", "global_rank", "(.*)"), "culprit_host", "$1", "host", "(.*)"),
                  "rank", "$1", "victim_rank", "(.*)")
              )
            ||| % c,
            labels: {'via': 'rank'},
          },
          // The shortest wait the stalled ranks of a communicator reported lately: about the stillness a rank needs
          // before it says it is stalled (its first report comes within a scrape of that).
          {
            record: "ncclscope:hang_comm_first_wait_seconds",
            expr: "min by (ncclscope_job, comm) (min_over_time(ncclscope:hang_victim[%(hangCommMemory)s]))" % c,
          },
          // The most collectives a stalled rank of the communicator issued (each exports its own beside its wait): a
          // rank that issued as many has issued the collective the stalled ranks wait in.
          {
            record: "ncclscope:hang_comm_colls_issued",
            expr: "max by (ncclscope_job, comm) (ncclscope_comm_wait_last_seq%(sel)s)" % c,
          },
          // The ranks some stalled rank waits on directly (global_rank, host: the rank waited on).
          {
            record: "ncclscope:hang_waited_on",
            expr: |||
              label_replace(label_replace(
                group by (ncclscope_job, comm, culprit_global_rank, culprit_host) (ncclscope:hang_wait_edge),
                "global_rank", "$1", "culprit_global_rank", "(.*)"), "host", "$1", "culprit_host", "(.*)")
            ||| % c,
          },
          // Peers whose connection already failed under a stalled rank's request (global_rank: the peer).
          {
            record: "ncclscope:hang_peer_failed",
            expr: peerFailed % c,
          },
          // A rank that reported the stalled communicator in the last 2 minutes and no longer does (a failed scrape
          // marks its series stale): killed, crashed, frozen. Either a waiting rank's connection to it failed, or its
          // target failed two scrapes in a row (one slow scrape of an overloaded rank is not enough).
          {
            record: "ncclscope:hang_culprit",
            expr: processCulprit % c,
            labels: {'class': 'process'},
          },
          // The roots of the waits: the ranks the stalled ranks wait on that are not stalled themselves (global_rank,
          // host). Following the edges to where they end names the culprit without any earlier scrape of it: a rank
          // killed or frozen in a job's first seconds, before Prometheus first scraped it, never reported the
          // communicator, but the wait edges and its file_sd target carry its identity.
          {
            record: "ncclscope:hang_root",
            expr: "ncclscope:hang_waited_on unless on (ncclscope_job, comm, global_rank) ncclscope:hang_victim",
          },
          // A root whose connection failed under a waiting rank's request: its process is gone (a connection does not
          // fail because a host is slow), whatever other root an overloaded host shows.
          {
            record: "ncclscope:hang_culprit",
            expr: |||
              (
                ncclscope:hang_root and on (ncclscope_job, global_rank) ncclscope:hang_peer_failed
              )
              * on (ncclscope_job, comm) group_left ncclscope:hang_comm_seconds
              unless on (ncclscope_job, comm) ncclscope:hang_culprit{class="process", via=""}
            |||,
            // via keeps this rule's own output of the previous evaluation out of its `unless`.
            labels: {'class': 'process', 'via': 'failed_edge'},
          },
          // In how many different functions the stalled ranks of a communicator wait: a kernel or a link is only
          // named where they all wait in the same one (a rank alone in another function looks like a stuck kernel).
          {
            record: "ncclscope:hang_comm_funcs",
            expr: funcCount % c,
          },
          {
            record: "ncclscope:hang_culprit",
            expr: (mismatchCulprit + 'unless on (ncclscope_job, comm) ncclscope:hang_culprit{class="process"}\n') % c,
            labels: {'class': 'mismatch'},
          },
          // A rank idle on every communicator (only then does it export ncclscope_comm_idle_last_seq: it waits in
          // nothing, and its latest scrape says so; a failed or a later one ends the series) and behind the stalled
          // ranks in collectives issued: it never issued the collective they wait in. Or, where its operations are
          // seen to finish on the GPU (by="kernel": nothing in flight means nothing issued is unfinished), the peer a
          // stalled send or receive waits on: it never issued the matching one. (Without KernelCh a rank in the middle
          // of point-to-point waits looks idle until its own stillness reaches its threshold: the rule in
          // ncclscope.hang.in_flight decides those.) It reads only the idle and the stalled ranks' series, so its
          // cost follows the hang, not the job's size, and it needs no wait edge. It reads no series recorded by this
          // group but the precedence, so an engine that sees recorded series an evaluation late (vmalert writes them
          // back through remote write) names it one level after the raw series. A culprit busy elsewhere (in flight
          // in another communicator) is not idle: the rule in ncclscope.hang.in_flight names it.
          {
            record: "ncclscope:hang_culprit",
            expr: (idleCulprit + |||
              unless on (ncclscope_job, comm) ncclscope:hang_culprit{class=~"process|mismatch"}
            |||) % c,
            labels: {'class': 'not_joined', 'from': 'idle'},
          },
          {
            record: "ncclscope:hang_culprit",
            expr: (|||
              (
                group by (ncclscope_job, comm, rank, host, global_rank) (ncclscope_comm_wait_seconds{class="kernel"%(selc)s})
                * on (ncclscope_job, comm) group_left ncclscope:hang_comm_seconds
              )
              and on (ncclscope_job, comm, global_rank) ncclscope:hang_waited_on
              and on (ncclscope_job, comm) (ncclscope:hang_comm_funcs == 1)
            ||| + unlessEarlier(['ncclscope:hang_culprit{class=~"process|mismatch|not_joined"}'])) % c,
            labels: {'class': 'kernel'},
          },
          // The ranks of a job with a stalled communicator, valued with their latest good scrape (lastGoodScrape
          // above, recorded: on Prometheus the subquery over every rank costs more than the series it writes).
          {
            record: "ncclscope:hang_rank_answered",
            expr: ('max by (ncclscope_job, global_rank) (\n' + indent(goodScrapeTimes, '  ') + '\n)\n' + |||
              and on (ncclscope_job) group by (ncclscope_job) (ncclscope:hang_comm_seconds)
            |||) % c,
          },
          // The roots that do not answer now: their latest scrape failed, or the one under way is overdue
          // (hangScrapeOverdueSeconds; a frozen rank is named before its scrape times out).
          {
            record: "ncclscope:hang_root_silent",
            expr: (|||
              ncclscope:hang_root
              and on (ncclscope_job, global_rank)
            ||| + targetSilent) % c,
          },
          // A silent root that has not answered since this stall began either (an answer during an earlier stall
          // of the communicator, one that ended, does not count), where it is the communicator's one silent root
          // and no other class named a culprit: on a host so overloaded that many ranks miss their scrapes, none of
          // them is guessed (the two-scrape rule above and the per-rank alerts remain).
          {
            record: "ncclscope:hang_culprit",
            expr: |||
              (
                (
                  ncclscope:hang_root_silent
                  unless on (ncclscope_job, comm, global_rank)
                  (
                    ncclscope:hang_root_silent * 0
                    + on (ncclscope_job, global_rank) group_left
                    max_over_time(ncclscope:hang_rank_answered[%(hangCommMemory)s])
                    > on (ncclscope_job, comm) group_left ncclscope:hang_comm_since
                  )
                )
                and on (ncclscope_job, comm) (count by (ncclscope_job, comm) (ncclscope:hang_root_silent) == 1)
              )
              * on (ncclscope_job, comm) group_left ncclscope:hang_comm_seconds
              unless on (ncclscope_job, comm) ncclscope:hang_culprit{via!="silent_edge"}
            ||| % c,
            labels: {'class': 'process', 'via': 'silent_edge'},
          },
          // Every rank of the communicator (all nranks of them, counted against the nranks label of its rank 0's
          // ncclscope_comm_info: one series per communicator, not one per rank, read) is
          // stalled and reports it, and this one waits on a peer that waits too: the pair with the longest wait. Its
          // receiver was the first to starve (the others still moved data for a while), so the broken link is the one
          // into it. All nranks, not all the ranks Prometheus has seen: a rank frozen or killed before its first scrape
          // was never seen, and the wait edges end at it (a process, above), not in a pair of live ranks; and a rank
          // about to show another class, such as a mismatch whose own threshold is longer, is not taken for a link.
          // "Longest" by when each wait began (sample time minus wait), not by the waits' values: those grow with the
          // time since each rank's last scrape, so two ranks whose waits began together would trade places from one
          // evaluation to the next with the scrape offsets, and the alert would name one link, then the other.
          {
            record: "ncclscope:hang_culprit",
            expr: (|||
              label_replace(label_replace(label_replace(label_replace(
                bottomk by (ncclscope_job, comm) (1,
                  (
                    ncclscope:hang_wait_edge
                    and on (ncclscope_job, comm, culprit_global_rank)
                    label_replace(ncclscope:hang_victim, "culprit_global_rank", "$1", "global_rank", "(.*)")
                    and on (ncclscope_job, comm) (ncclscope:hang_comm_funcs == 1)
                    and on (ncclscope_job, comm)
                    (
                      count_values by (ncclscope_job, comm) ("nranks", count by (ncclscope_job, comm) (ncclscope:hang_victim))
                      and on (ncclscope_job, comm, nranks) ncclscope_comm_info{rank="0"%(selc)s}
                    )
                  ) * 0
                  + on (ncclscope_job, comm, global_rank) group_left
                  min by (ncclscope_job, comm, global_rank) (
                    timestamp(ncclscope_comm_wait_seconds{class="peer"%(selc)s}) - ncclscope_comm_wait_seconds{class="peer"%(selc)s}
                  )
                ),
                "peer_global_rank", "$1", "global_rank", "(.*)"), "peer_host", "$1", "host", "(.*)"),
                "global_rank", "$1", "culprit_global_rank", "(.*)"), "host", "$1", "culprit_host", "(.*)")
              * 0 + on (ncclscope_job, comm) group_left ncclscope:hang_comm_seconds
            ||| + unlessEarlier(['ncclscope:hang_culprit{class=~"process|mismatch|not_joined|kernel"}'])) % c,
            labels: {'class': 'link'},
          },
          // Pauses are not hangs: a named hang that ended by itself (the communicator is no longer stalled and
          // its rank 0 still reports it), with how long it had lasted, for the evaluations just after. Not where a process
          // stopped answering (a failure ends in an abort, not a resume), nor while a target of the job is down or
          // overdue (a wait that only vanished with a failed scrape has not ended).
          {
            record: "ncclscope:hang_resumed_seconds",
            expr: (|||
              max by (ncclscope_job, comm, class, global_rank, host) (
                max_over_time(ncclscope:hang_culprit{class!="process"}[%(hangTargetDownLookback)s])
              )
              unless on (ncclscope_job, comm) ncclscope:hang_comm_seconds
              and on (ncclscope_job, comm) ncclscope_comm_info{rank="0"%(selc)s}
              unless on (ncclscope_job)
            ||| + targetSilent) % c,
          },
          // When a stalled job pages (seconds stuck): past hangPageMinSeconds and past hangPageFactor times the
          // longest wait it came through in the last hangPauseMemory. Only for jobs stalled now.
          {
            record: "ncclscope:hang_page_after_seconds",
            expr: |||
              clamp_min(
                %(hangPageFactor)s * max by (ncclscope_job) (max_over_time(ncclscope:hang_resumed_seconds[%(hangPauseMemory)s]))
                and on (ncclscope_job) group by (ncclscope_job) (ncclscope:hang_comm_seconds),
                %(hangPageMinSeconds)s
              )
              or
              group by (ncclscope_job) (ncclscope:hang_comm_seconds) * 0 + %(hangPageMinSeconds)s
            ||| % c,
          },
          // One alert per root cause (in the recording rules' group, so it reads this evaluation's culprits): the
          // culprit's global rank and host, the communicator and the class. The ranks that wait on it are listed in
          // the description, not alerted one by one. The process and idle culprits are read from raw series too, each
          // at its place in the order of precedence: on vmalert that saves the levels of recorded series.
          {
            alert: "NcclscopeHang",
            expr: byPrecedence([
              recorded('process'), withClass(processCulprit, 'process'),
              recorded('mismatch'), withClass(mismatchCulprit, 'mismatch'),
              recorded('not_joined'), withClass(idleCulprit, 'not_joined'),
              recorded('kernel'), withClass(kernelCulprit, 'kernel'), recorded('link'),
              withClass(silentCulprit, 'process'),
            ]) % c,
            labels: {'severity': c.hangEarlySeverity},
            annotations: {
              summary: std.join(' ', [
                "{{ if eq $labels.class \"link\" -}} NCCL job {{ $labels.ncclscope_job }} hangs on",
                "communicator {{ $labels.comm }}: the link from global rank {{ $labels.global_rank }}",
                "({{ $labels.host }}) to global rank {{ $labels.peer_global_rank }}",
                "({{ $labels.peer_host }}{{ if $labels.nic }}, NIC {{ $labels.nic }}{{ end }}) delivers",
                "nothing {{- else -}} NCCL job {{ $labels.ncclscope_job }} hangs on communicator",
                "{{ $labels.comm }} because of global rank {{ $labels.global_rank }} on {{ $labels.host }}:",
                "{{ if eq $labels.class \"process\" }}its process is gone or frozen",
                "{{- else if eq $labels.class \"mismatch\" }}it waits in {{ $labels.func }}, a collective the",
                "others did not issue {{- else if eq $labels.class \"not_joined\" }}it did not issue the",
                "operation the others wait in {{- else }}its GPU kernel does not finish{{ end }} {{- end }}",
              ]),
              description: std.join(' ', [
                "Class {{ $labels.class }}, stuck for {{ $value | humanizeDuration }}.",
                "{{ with query (printf \"count(ncclscope:hang_victim{ncclscope_job=%q,comm=%q})\" $labels.ncclscope_job $labels.comm) -}}",
                "Ranks waiting ({{ . | first | value }}; global rank@host, the first 8):",
                "{{- end }}{{ range query (printf \"topk(8, ncclscope:hang_victim{ncclscope_job=%q,comm=%q})\" $labels.ncclscope_job $labels.comm) | sortByLabel \"global_rank\" }}",
                "{{ .Labels.global_rank }}@{{ .Labels.host }}{{ end }}. Next step:",
                "{{ if eq $labels.class \"process\" -}} check whether global rank {{ $labels.global_rank }}",
                "still runs on {{ $labels.host }} (scheduler log, dmesg for OOM kills and Xid errors, `kill",
                "-0`; a stopped process shows State T in /proc/PID/status).",
                "{{- else if eq $labels.class \"mismatch\" -}} the program issues collectives in a different",
                "order on global rank {{ $labels.global_rank }}; dump its Python stack (py-spy dump) and",
                "compare with a waiting rank's. {{- else if eq $labels.class \"not_joined\" -}} dump the",
                "Python and native stacks of global rank {{ $labels.global_rank }} on {{ $labels.host }}",
                "(py-spy dump --native, gdb) to see where it stopped issuing NCCL calls.",
                "{{- else if eq $labels.class \"kernel\" -}} check the GPU of global rank",
                "{{ $labels.global_rank }} on {{ $labels.host }} (nvidia-smi, Xid errors in dmesg, DCGM) and",
                "the kernel it runs (py-spy dump --native). {{- else -}} check the NIC{{ if $labels.nic }}",
                "{{ $labels.nic }}{{ end }} of {{ $labels.peer_host }} and the path to {{ $labels.host }}:",
                "port state and counters (ibstat, node_exporter's node_infiniband_*), the cable and the",
                "switch port. {{- end }} ncclscope-analyze on the stall dumps gives the same verdict with",
                "the operation's detail. This early answer does not page: a pause (a checkpoint, an evaluation",
                "before a barrier) looks the same until it ends.",
                "{{- with query (printf \"ncclscope:hang_page_after_seconds{ncclscope_job=%q}\" $labels.ncclscope_job) }}",
                "NcclscopeHangPage pages if it is still stuck after {{ . | first | value | humanizeDuration }}.",
                "{{- end }}",
              ]),
            },
          },
          // The page: a named culprit stuck past what this job is known to come through (hangPageMinSeconds, and
          // hangPageFactor times its longest survived wait in the last hangPauseMemory).
          {
            alert: "NcclscopeHangPage",
            expr: culprits + '  > on (ncclscope_job) group_left ncclscope:hang_page_after_seconds\n',
            'for': c.hangPageFor,
            labels: {'severity': c.hangPageSeverity},
            annotations: {
              summary: std.join(' ', [
                "NCCL job {{ $labels.ncclscope_job }} has hung for {{ $value | humanizeDuration }} on communicator",
                "{{ $labels.comm }}, longer than any pause it came through: class {{ $labels.class }}, global rank",
                "{{ $labels.global_rank }} on {{ $labels.host }}",
              ]),
              description: std.join(' ', [
                "NcclscopeHang named global rank {{ $labels.global_rank }} on {{ $labels.host }} (class",
                "{{ $labels.class }}{{ if $labels.peer_global_rank }}, the link to global rank",
                "{{ $labels.peer_global_rank }} on {{ $labels.peer_host }}{{ end }}) and it has now been stuck",
                "{{ $value | humanizeDuration }}: past " + std.toString(c.hangPageMinSeconds) + " s and past",
                std.toString(c.hangPageFactor) + " times the longest wait this job came through in the last",
                c.hangPauseMemory + ". Next step: the NcclscopeHang alert of this communicator says what to check",
                "for the class; docs/runbook.md, NcclscopeHangPage, says how pauses are told apart.",
              ]),
            },
          },
          // A named hang that ended by itself: a pause, now learned (NcclscopeHangPage waits past it from now on).
          {
            alert: "NcclscopeHangResumed",
            expr: "max_over_time(ncclscope:hang_resumed_seconds[%(hangResumedShownFor)s])" % c,
            labels: {'severity': 'info'},
            annotations: {
              summary: std.join(' ', [
                "NCCL job {{ $labels.ncclscope_job }} resumed on communicator {{ $labels.comm }} after",
                "{{ $value | humanizeDuration }}: global rank {{ $labels.global_rank }} on {{ $labels.host }} was a pause,",
                "not a hang",
              ]),
              description: std.join(' ', [
                "The wait NcclscopeHang named (class {{ $labels.class }}, global rank {{ $labels.global_rank }} on",
                "{{ $labels.host }}) ended by itself after {{ $value | humanizeDuration }}: a checkpoint, an",
                "evaluation or another pause before a collective. ncclscope remembers it for " + c.hangPauseMemory + ",",
                "and NcclscopeHangPage now waits past " + std.toString(c.hangPageFactor) + " times the longest such",
                "wait (at least " + std.toString(c.hangPageMinSeconds) + " s). Nothing to do unless these pauses are unexpected.",
              ]),
            },
          },
        ],
      },
      // A culprit others wait on that is not idle everywhere (in flight in another communicator), or a rank that does
      // not export ncclscope_comm_idle_last_seq (an older ncclscope, NCCLSCOPE_FR_DEPTH=0): every rank's state in
      // every communicator, so at the slower interval of the progress group (c.hangProgressInterval).
      {
        name: "ncclscope.hang.in_flight",
        interval: c.hangProgressInterval,
        rules: [
          // A rank a stalled rank waits on, with nothing in flight in that communicator as scraped after the stall
          // began (a rank between two operations just before it is not a culprit), and not stalled itself (without
          // KernelCh a stalled rank shows nothing in flight either): it never issued the operation.
          // Without KernelCh (by="network") nothing is ever in flight, and a rank in the middle of the waits says it is
          // stalled only once its own connections have been still as long as the others': a scrape of it before that
          // (sooner after the stall began than the shortest wait reported) does not tell it from a culprit, unless it
          // is behind the stalled ranks in collectives issued (it never issued the one they wait in).
          // With KernelCh (by="kernel": nothing in flight means all it issued finished), where they wait in a
          // collective, a rank that issued as many collectives as they did is no culprit either: it finished theirs,
          // and its scrape between two operations met a stalled rank's scrape taken just before that rank's wait
          // ended (seen on a host that starved the whole job for seconds). Without KernelCh such a rank can still be
          // the culprit (a kernel that never finishes, a different collective: both done once enqueued).
          // (Where nobody says whom they wait on, the group ncclscope.hang.progress below compares the ranks' progress.)
          // It reads every rank's state in every communicator: only for a culprit the idle rule above cannot name.
          // Whether the rank is stalled itself comes from its raw wait series, not from ncclscope:hang_victim: the
          // engine runs this group beside the 5 s one, so an evaluation can read this scrape's series with the
          // previous evaluation's victims and name a rank whose wait began in between (promtool runs showed it).
          {
            record: "ncclscope:hang_culprit",
            expr: (|||
              (
                (
                  (ncclscope_comm_in_flight_operations%(sel)s == 0) + 1
                  and on (ncclscope_job, comm, global_rank) ncclscope:hang_waited_on
                  unless on (ncclscope_job, comm, global_rank) ncclscope_comm_wait_seconds%(sel)s
                  and on (ncclscope_job, comm, rank)
                  (
                    timestamp(ncclscope_comm_in_flight_operations%(sel)s)
                    > on (ncclscope_job, comm) group_left ncclscope:hang_comm_since
                  )
                  unless on (ncclscope_job, comm, rank)
                  (
                    (
                      timestamp(ncclscope_comm_in_flight_operations%(sel)s)
                      - on (ncclscope_job, comm) group_left ncclscope:hang_comm_since
                      <= on (ncclscope_job, comm) group_left ncclscope:hang_comm_first_wait_seconds
                      and on (ncclscope_job, comm, rank) ncclscope_comm_completion_seen{by="network"%(selc)s}
                      unless on (ncclscope_job, comm, rank)
                      (%(collsIssued)s < on (ncclscope_job, comm) group_left ncclscope:hang_comm_colls_issued)
                    )
                    or on (ncclscope_job, comm, rank)
                    (
                      %(collsIssued)s >= on (ncclscope_job, comm) group_left ncclscope:hang_comm_colls_issued
                      and on (ncclscope_job, comm, rank) ncclscope_comm_completion_seen{by="kernel"%(selc)s}
                      and on (ncclscope_job, comm) ncclscope_comm_wait_seconds{func!~"Send|Recv"%(selc)s}
                    )
                  )
                )
                * on (ncclscope_job, comm) group_left ncclscope:hang_comm_seconds
              )
            ||| + unlessEarlier(['ncclscope:hang_culprit{class=~"process|mismatch"}',
                                 'ncclscope:hang_culprit{class="not_joined", from="idle"}']))
                  % (c { collsIssued: collsIssued % c }),
            labels: {'class': 'not_joined', 'from': 'in_flight'},
          },
        ],
      },
      // Where the stalled ranks do not say whom they wait on (NCCL's own transports without ProxyOp events) and the
      // culprit is not idle everywhere (the idle rule of the first group needs no edge): the rank
      // behind the furthest one (collectives issued, or sends/receives started) with nothing in flight there, as
      // scraped after the stall began. Every 15 s: it reads every rank's progress in every communicator, the costliest
      // query of these rules at scale (docs/measurements.md, "Hang detection at scale").
      {
        name: "ncclscope.hang.progress",
        interval: c.hangProgressInterval,
        rules: [
          // Each target's global rank where `up` lacks it (prometheus-operator: upRanked above), from the series the
          // rank serves, valued with when it was last seen; a target that stops answering keeps its last one (the
          // rule carries its own latest value forward) for as long as it is a target. Empty with file_sd.
          {
            record: "ncclscope:target_global_rank",
            expr: |||
              (
                max by (job, instance, ncclscope_job, global_rank) (
                  timestamp(ncclscope_process_info{global_rank!=""%(selc)s})
                )
                or on (job, instance)
                topk by (job, instance) (1, last_over_time(ncclscope:target_global_rank[%(hangCommMemory)s]))
              )
              and on (job, instance) up{ncclscope_job!="", global_rank=""%(selc)s}
            ||| % c,
          },
          {
            record: "ncclscope:hang_culprit",
            expr: (|||
              (
                (
                  group without (kind) (
                    (
                      max by (ncclscope_job, comm, kind) (sum without (func) (ncclscope_comm_last_seq%(sel)s))
                      - on (ncclscope_job, comm, kind) group_right
                      sum without (func) (ncclscope_comm_last_seq%(sel)s)
                    ) > 0
                  )
                  and on (ncclscope_job, comm, rank)
                  (
                    ncclscope_comm_in_flight_operations%(sel)s == 0
                    and
                    timestamp(ncclscope_comm_in_flight_operations%(sel)s)
                    > on (ncclscope_job, comm) group_left ncclscope:hang_comm_since
                  )
                )
                * on (ncclscope_job, comm) group_left ncclscope:hang_comm_seconds
              )
            ||| + unlessEarlier(['ncclscope:hang_waited_on', 'ncclscope:hang_culprit{class=~"process|mismatch"}',
                                 'ncclscope:hang_culprit{class="not_joined", from="idle"}'])) % c,
            labels: {'class': 'not_joined', 'from': 'progress'},
          },
        ],
      },
    ],
  },
}
