// The ncclscope overview dashboard (Grafana 10+). Strings with %(...)s take the parameters of config.libsonnet.
// Panels name communicators by joining ncclscope:comm_name, recorded once a minute: `or ignoring (comm_name)` keeps
// the rows of a communicator not named yet (a hang in a job's first minute still shows).
{
  dashboard(c):: {
    "__inputs": [
      {
        "description": "The Prometheus that scrapes ncclscope (and node_exporter)",
        "label": "Prometheus",
        "name": "DS_PROMETHEUS",
        "pluginId": "prometheus",
        "pluginName": "Prometheus",
        "type": "datasource"
      }
    ],
    "__requires": [
      {
        "id": "grafana",
        "name": "Grafana",
        "type": "grafana",
        "version": "10.0.0"
      },
      {
        "id": "prometheus",
        "name": "Prometheus",
        "type": "datasource",
        "version": "1.0.0"
      },
      {
        "id": "stat",
        "name": "Stat",
        "type": "panel",
        "version": ""
      },
      {
        "id": "table",
        "name": "Table",
        "type": "panel",
        "version": ""
      },
      {
        "id": "timeseries",
        "name": "Time series",
        "type": "panel",
        "version": ""
      }
    ],
    "annotations": {
      "list": []
    },
    "description": "Which rank the others wait for, which communicator is stuck, what each link and NIC does. Needs the recording rules of rules/ (docs/rules-and-dashboards.md).",
    "editable": true,
    "graphTooltip": 1,
    "id": null,
    "links": [
      {
        "title": "DCGM dashboard",
        "type": "link",
        "url": "/d/${dcgm_dashboard}",
        "keepTime": true,
        "includeVars": false,
        "targetBlank": false,
        "icon": "external link",
        "asDropdown": false,
        "tags": [],
        "tooltip": "NVIDIA's dcgm-exporter dashboard (uid in the dcgm_dashboard variable)"
      }
    ],
    "panels": [
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "One row per root cause of a hang (recording rule ncclscope:hang_culprit, rules/ncclscope-hang.yml): the culprit's global rank and host, the communicator, the class (process gone or frozen, mismatch, not_joined, kernel, link with the receiving rank and its NIC) and how long the communicator has been stuck. Empty while nothing hangs. docs/stall-detection.md.",
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 7,
          "w": 12,
          "x": 0,
          "y": 0
        },
        "id": 17,
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(ncclscope:hang_culprit{ncclscope_job=~\"$job\", comm=~\"$comm\"}) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (ncclscope:hang_culprit{ncclscope_job=~\"$job\", comm=~\"$comm\"})",
            "format": "table",
            "instant": true,
            "legendFormat": "{{comm_name}} {{global_rank}}",
            "refId": "A"
          }
        ],
        "title": "Hang culprits (NcclscopeHang)",
        "transformations": [
          {
            "id": "organize",
            "options": {
              "excludeByName": {
                "Time": true,
                "__name__": true,
                "culprit_global_rank": true,
                "culprit_host": true,
                "direction": true,
                "gpu_uuid": true,
                "instance": true,
                "job": true,
                "local_rank": true
              },
              "renameByName": {
                "Value": "stuck for",
                "comm": "communicator",
                "global_rank": "culprit global rank",
                "host": "culprit host",
                "peer_global_rank": "link to global rank",
                "peer_host": "link to host",
                "rank": "rank in comm"
              }
            }
          }
        ],
        "type": "table"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "One row per place a stalled rank's oldest operation waits (ncclscope_comm_wait_seconds, exported only while the communicator is past its adaptive stall threshold): class host (not launched), peer (whom, on which NIC, waiting or failed), kernel (launched, nothing pending on the network) or launched (not told apart), and for how long nothing completed there.",
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 7,
          "w": 12,
          "x": 12,
          "y": 0
        },
        "id": 18,
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(ncclscope_comm_wait_seconds{ncclscope_job=~\"$job\", comm=~\"$comm\"%(selc)s}) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (ncclscope_comm_wait_seconds{ncclscope_job=~\"$job\", comm=~\"$comm\"%(selc)s})" % c,
            "format": "table",
            "instant": true,
            "legendFormat": "{{comm_name}} {{global_rank}}",
            "refId": "A"
          }
        ],
        "title": "Where stalled ranks wait",
        "transformations": [
          {
            "id": "organize",
            "options": {
              "excludeByName": {
                "Time": true,
                "__name__": true,
                "gpu_uuid": true,
                "instance": true,
                "job": true,
                "local_rank": true
              },
              "renameByName": {
                "Value": "waiting for",
                "comm": "communicator",
                "global_rank": "global rank",
                "peer_global_rank": "waits on global rank",
                "peer_host": "waits on host",
                "peer_rank": "waits on rank"
              }
            }
          }
        ],
        "type": "table"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Processes of the job with ncclscope loaded whose metrics Prometheus has now (recording rule ncclscope:job_ranks_reporting). Fewer than the job's world size: a rank is down or not scraped.",
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 6,
          "w": 4,
          "x": 0,
          "y": 7
        },
        "id": 1,
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "ncclscope:job_ranks_reporting{ncclscope_job=~\"$job\"}",
            "instant": true,
            "legendFormat": "{{ncclscope_job}}",
            "refId": "A"
          }
        ],
        "title": "Ranks reporting",
        "type": "stat"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Communicators with at least one rank flagged by ncclscope's stall watch (an operation in flight longer than NCCLSCOPE_STALL_TIMEOUT_S). Non-zero: see the stall panels below and the NcclscopeCommStalled alert.",
        "fieldConfig": {
          "defaults": {
            "thresholds": {
              "mode": "absolute",
              "steps": [
                {
                  "color": "green",
                  "value": null
                },
                {
                  "color": "red",
                  "value": 1
                }
              ]
            },
            "unit": "short"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 6,
          "w": 4,
          "x": 4,
          "y": 7
        },
        "id": 2,
        "options": {
          "colorMode": "background",
          "reduceOptions": {
            "calcs": [
              "lastNotNull"
            ]
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "ncclscope:job_comms_stalled{ncclscope_job=~\"$job\"}",
            "instant": true,
            "legendFormat": "{{ncclscope_job}}",
            "refId": "A"
          }
        ],
        "title": "Stalled communicators",
        "type": "stat"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "The rank each communicator waits for (recording rule ncclscope:comm_straggler:rate): the largest lateness, i.e. how much shorter its collectives are than the slowest rank's. Clock-free: every duration is measured on one host. A lateness near zero means nobody is waited for." % c,
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 6,
          "w": 16,
          "x": 8,
          "y": 7
        },
        "id": 3,
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(ncclscope:comm_straggler:rate{ncclscope_job=~\"$job\", comm=~\"$comm\"}) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (ncclscope:comm_straggler:rate{ncclscope_job=~\"$job\", comm=~\"$comm\"})" % c,
            "format": "table",
            "instant": true,
            "legendFormat": "{{comm_name}} rank {{rank}}",
            "refId": "A"
          }
        ],
        "title": "Straggler per communicator",
        "transformations": [
          {
            "id": "organize",
            "options": {
              "excludeByName": {
                "Time": true,
                "__name__": true,
                "instance": true,
                "job": true,
                "kind": true
              },
              "renameByName": {
                "Value": "lateness per collective",
                "comm": "communicator",
                "global_rank": "global rank",
                "rank": "late rank"
              }
            }
          }
        ],
        "type": "table"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Per rank: the slowest rank's seconds per collective minus this rank's (ncclscope:comm_rank_lateness_seconds:rate). The rank with the largest lateness arrives last; the others wait that long in every collective. The top $topk series only (the topk variable)." % c,
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 0,
          "y": 13
        },
        "id": 4,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(topk($topk, ncclscope:comm_rank_lateness_seconds:rate{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"})) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (topk($topk, ncclscope:comm_rank_lateness_seconds:rate{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"}))" % c,
            "legendFormat": "{{comm_name}} rank {{rank}} ({{host}})",
            "refId": "A"
          }
        ],
        "title": "Lateness per rank",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Per rank and communicator: GPU/proxy-timed seconds inside collectives (waiting for peers included) over the collectives completed (ncclscope:comm_rank_seconds_per_op:rate). The top $topk series only (the topk variable)." % c,
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 12,
          "y": 13
        },
        "id": 5,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(topk($topk, ncclscope:comm_rank_seconds_per_op:rate{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"})) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (topk($topk, ncclscope:comm_rank_seconds_per_op:rate{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"}))" % c,
            "legendFormat": "{{comm_name}} rank {{rank}} ({{host}})",
            "refId": "A"
          }
        ],
        "title": "Seconds per collective per rank",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Per process (global rank) and operation kind: quantiles of ncclscope_operation_duration_seconds (buckets 16 us to 17 s, x16 apart at the basic level: docs/metrics.md). The top $topk series only (the topk variable).",
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 0,
          "y": 21
        },
        "id": 6,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "topk($topk, histogram_quantile(0.5, sum by (le, host, global_rank, kind) (rate(ncclscope_operation_duration_seconds_bucket{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}[$__rate_interval]))))" % c,
            "legendFormat": "p50 global rank {{global_rank}} {{kind}}",
            "refId": "A"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "topk($topk, histogram_quantile(0.99, sum by (le, host, global_rank, kind) (rate(ncclscope_operation_duration_seconds_bucket{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}[$__rate_interval]))))" % c,
            "legendFormat": "p99 global rank {{global_rank}} {{kind}}",
            "refId": "B"
          }
        ],
        "title": "Operation latency p50 / p99 per rank",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "nccl-tests' busbw per communicator: collective bytes times the bus factor over the ranks' mean time inside collectives (as ncclscope:comm_bus_bandwidth_bytes_per_second:rate, at the dashboard's rate interval)." % c,
        "fieldConfig": {
          "defaults": {
            "unit": "Bps"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 12,
          "y": 21
        },
        "id": 7,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(sum by (ncclscope_job, comm) (rate(ncclscope_comm_bus_bytes_total{ncclscope_job=~\"$job\", comm=~\"$comm\"%(selc)s}[$__rate_interval])) / (sum by (ncclscope_job, comm) (rate(ncclscope_comm_operation_seconds_total{ncclscope_job=~\"$job\", comm=~\"$comm\", kind=\"coll\"%(selc)s}[$__rate_interval])) > 0)) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (sum by (ncclscope_job, comm) (rate(ncclscope_comm_bus_bytes_total{ncclscope_job=~\"$job\", comm=~\"$comm\"%(selc)s}[$__rate_interval])) / (sum by (ncclscope_job, comm) (rate(ncclscope_comm_operation_seconds_total{ncclscope_job=~\"$job\", comm=~\"$comm\", kind=\"coll\"%(selc)s}[$__rate_interval])) > 0))" % c,
            "legendFormat": "{{comm_name}}",
            "refId": "A"
          }
        ],
        "title": "Bus bandwidth per communicator",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Age of the oldest operation (collective or send/recv) each rank has in flight per communicator. It grows without bound on the ranks waiting in a hang; the rank that stopped issuing has nothing in flight. The top $topk series only (the topk variable).",
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 0,
          "y": 29
        },
        "id": 8,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(topk($topk, ncclscope_comm_oldest_in_flight_age_seconds{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"%(selc)s})) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (topk($topk, ncclscope_comm_oldest_in_flight_age_seconds{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"%(selc)s}))" % c,
            "legendFormat": "{{comm_name}} rank {{rank}} ({{host}})",
            "refId": "A"
          }
        ],
        "title": "Oldest operation in flight per rank",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "How many operations of each kind (coll: collectives issued; p2p: sends and receives started) a rank is behind the furthest rank of a stalled communicator (ncclscope:comm_rank_seq_lag: ranks behind on communicators where some rank is stalled; empty while the job is healthy). In a hang the rank that stopped issuing stays behind. The top $topk series only (the topk variable).",
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 12,
          "y": 29
        },
        "id": 9,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(topk($topk, ncclscope:comm_rank_seq_lag{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"})) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (topk($topk, ncclscope:comm_rank_seq_lag{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"}))",
            "legendFormat": "{{comm_name}} {{kind}} rank {{rank}} ({{host}})",
            "refId": "A"
          }
        ],
        "title": "Sequence lag by kind (collective and point-to-point)",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Operations in flight per rank (A) and ranks flagged stalled by ncclscope's stall watch (B), per communicator. The top $topk series only (the topk variable).",
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 0,
          "y": 37
        },
        "id": 10,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(topk($topk, ncclscope_comm_in_flight_operations{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"%(selc)s})) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (topk($topk, ncclscope_comm_in_flight_operations{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"%(selc)s}))" % c,
            "legendFormat": "in flight {{comm_name}} rank {{rank}}",
            "refId": "A"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(sum by (ncclscope_job, comm) (ncclscope_comm_stalled{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"%(selc)s})) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (sum by (ncclscope_job, comm) (ncclscope_comm_stalled{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"%(selc)s}))" % c,
            "legendFormat": "stalled ranks {{comm_name}}",
            "refId": "B"
          }
        ],
        "title": "Operations in flight and stall flags",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Completed operations per second per rank and kind (coll, p2p): a hang shows as a drop to zero, for point-to-point traffic too. The top $topk series only (the topk variable).",
        "fieldConfig": {
          "defaults": {
            "unit": "ops"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 12,
          "y": 37
        },
        "id": 11,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(topk($topk, sum by (ncclscope_job, comm, rank, kind) (rate(ncclscope_comm_operations_total{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"%(selc)s}[$__rate_interval])))) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (topk($topk, sum by (ncclscope_job, comm, rank, kind) (rate(ncclscope_comm_operations_total{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"%(selc)s}[$__rate_interval]))))" % c,
            "legendFormat": "{{comm_name}} {{kind}} rank {{rank}}",
            "refId": "A"
          }
        ],
        "title": "Operations per second by kind",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Bytes sent and received per NIC and host through ncclscope's net plugin.",
        "fieldConfig": {
          "defaults": {
            "unit": "Bps"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 0,
          "y": 45
        },
        "id": 12,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "sum by (host, nic) (rate(ncclscope_nic_sent_bytes_total{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}[$__rate_interval]))" % c,
            "legendFormat": "sent {{host}} {{nic}}",
            "refId": "A"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "sum by (host, nic) (rate(ncclscope_nic_received_bytes_total{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}[$__rate_interval]))" % c,
            "legendFormat": "received {{host}} {{nic}}",
            "refId": "B"
          }
        ],
        "title": "NIC throughput (ncclscope)",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "node_exporter's InfiniBand port counters (node_infiniband_*, --collector.infiniband) of the NICs ncclscope uses, joined by host and device (ncclscope's nic label is the verbs device name). Needs a host label on node_exporter's series equal to ncclscope's (see docs/rules-and-dashboards.md). Port traffic above ncclscope's is other traffic sharing the port.",
        "fieldConfig": {
          "defaults": {
            "unit": "Bps"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 12,
          "y": 45
        },
        "id": 13,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "sum by (host, nic, port) (label_replace(rate(node_infiniband_port_data_transmitted_bytes_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}" % c,
            "legendFormat": "port transmitted {{host}} {{nic}}/{{port}}",
            "refId": "A"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "sum by (host, nic, port) (label_replace(rate(node_infiniband_port_data_received_bytes_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}" % c,
            "legendFormat": "port received {{host}} {{nic}}/{{port}}",
            "refId": "B"
          }
        ],
        "title": "IB port traffic of the job's NICs (node_exporter)",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Errors per NIC: ncclscope's own count (A; by kind at NCCLSCOPE_METRICS_LEVEL=detailed) next to node_exporter's port counters for the same device (symbol errors, link downed, receive errors).",
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 0,
          "y": 53
        },
        "id": 14,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "sum by (host, nic) (increase(ncclscope_nic_errors_total{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}[$__rate_interval]))" % c,
            "legendFormat": "ncclscope {{host}} {{nic}}",
            "refId": "A"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "sum by (host, nic, port) (label_replace(increase(node_infiniband_symbol_error_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}" % c,
            "legendFormat": "symbol errors {{host}} {{nic}}/{{port}}",
            "refId": "B"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "sum by (host, nic, port) (label_replace(increase(node_infiniband_link_downed_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}" % c,
            "legendFormat": "link downed {{host}} {{nic}}/{{port}}",
            "refId": "C"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "sum by (host, nic, port) (label_replace(increase(node_infiniband_port_errors_received_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}" % c,
            "legendFormat": "receive errors {{host}} {{nic}}/{{port}}",
            "refId": "D"
          }
        ],
        "title": "NIC errors: ncclscope and IB port counters",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "Profiler events ncclscope dropped, per communicator rank (A) and outside any communicator (B). Always present (zero when nothing was dropped); anything above zero means the metrics under-count.",
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "gridPos": {
          "h": 8,
          "w": 12,
          "x": 12,
          "y": 53
        },
        "id": 15,
        "options": {
          "legend": {
            "calcs": [
              "lastNotNull",
              "max"
            ],
            "displayMode": "table",
            "placement": "right"
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(topk($topk, sum by (ncclscope_job, host, global_rank, comm, rank) (increase(ncclscope_comm_dropped_events_total{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\"%(selc)s}[$__rate_interval])))) * on (ncclscope_job, comm) group_left (comm_name) ncclscope:comm_name{ncclscope_job=~\"$job\"} or ignoring (comm_name) (topk($topk, sum by (ncclscope_job, host, global_rank, comm, rank) (increase(ncclscope_comm_dropped_events_total{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\"%(selc)s}[$__rate_interval]))))" % c,
            "legendFormat": "{{comm_name}} rank {{rank}} ({{host}})",
            "refId": "A"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "topk($topk, sum by (host, global_rank) (increase(ncclscope_profiler_dropped_events_total{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}[$__rate_interval])))" % c,
            "legendFormat": "outside communicators, global rank {{global_rank}} ({{host}})",
            "refId": "B"
          }
        ],
        "title": "Dropped profiler events",
        "type": "timeseries"
      },
      {
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "description": "One row per process: host, global and local rank, the GPU UUID (the parent GPU's on MIG, with the MIG GPU instance id in gpu_instance_id) and, where dcgm-exporter reports that GPU, its scrape instance and gpu index. Click a GPU UUID to open the DCGM dashboard (uid in the dcgm_dashboard variable) on that host and GPU over the same time range.",
        "fieldConfig": {
          "defaults": {
            "unit": "none"
          },
          "overrides": [
            {
              "matcher": {
                "id": "byName",
                "options": "gpu_uuid"
              },
              "properties": [
                {
                  "id": "links",
                  "value": [
                    {
                      "title": "DCGM dashboard of GPU ${__data.fields.gpu} on ${__data.fields.host}",
                      "url": "/d/${dcgm_dashboard}/?var-instance=${__data.fields.dcgm_instance}&var-gpu=${__data.fields.gpu}&${__url_time_range}"
                    }
                  ]
                }
              ]
            }
          ]
        },
        "gridPos": {
          "h": 7,
          "w": 24,
          "x": 0,
          "y": 61
        },
        "id": 16,
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "expr": "(max by (ncclscope_job, host, global_rank, local_rank, gpu_uuid, gpu_instance_id) (ncclscope_process_info{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}) * on (gpu_uuid) group_left (dcgm_instance, gpu) label_replace(label_replace(group by (%(dcgmUuidLabel)s, instance, gpu) (%(dcgmJoinMetric)s), \"gpu_uuid\", \"$1\", \"%(dcgmUuidLabel)s\", \"(.+)\"), \"dcgm_instance\", \"$1\", \"instance\", \"(.+)\")) or on (ncclscope_job, host, global_rank) max by (ncclscope_job, host, global_rank, local_rank, gpu_uuid, gpu_instance_id) (ncclscope_process_info{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s})" % c,
            "format": "table",
            "instant": true,
            "legendFormat": "{{host}} {{global_rank}}",
            "refId": "A"
          }
        ],
        "title": "Ranks and GPUs (links to DCGM)",
        "transformations": [
          {
            "id": "organize",
            "options": {
              "excludeByName": {
                "Time": true,
                "Value": true
              }
            }
          }
        ],
        "type": "table"
      }
    ],
    "refresh": "30s",
    "schemaVersion": 39,
    "tags": [
      "ncclscope",
      "nccl"
    ],
    "templating": {
      "list": [
        {
          "current": {
            "selected": false,
            "text": "${DS_PROMETHEUS}",
            "value": "${DS_PROMETHEUS}"
          },
          "hide": 0,
          "label": "Data source",
          "name": "datasource",
          "query": "prometheus",
          "type": "datasource"
        },
        {
          "allValue": ".*",
          "current": {},
          "datasource": {
            "type": "prometheus",
            "uid": "${datasource}"
          },
          "definition": "label_values(ncclscope_comm_info, ncclscope_job)",
          "includeAll": true,
          "label": "Job (ncclscope_job)",
          "multi": true,
          "name": "job",
          "query": {
            "query": "label_values(ncclscope_comm_info, ncclscope_job)",
            "refId": "job"
          },
          "refresh": 2,
          "regex": "",
          "sort": 1,
          "type": "query"
        },
        {
          "allValue": ".*",
          "current": {},
          "datasource": {
            "type": "prometheus",
            "uid": "${datasource}"
          },
          "definition": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\"%(selc)s}, host)" % c,
          "includeAll": true,
          "label": "Host",
          "multi": true,
          "name": "host",
          "query": {
            "query": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\"%(selc)s}, host)" % c,
            "refId": "host"
          },
          "refresh": 2,
          "regex": "",
          "sort": 1,
          "type": "query"
        },
        {
          "allValue": ".*",
          "current": {},
          "datasource": {
            "type": "prometheus",
            "uid": "${datasource}"
          },
          "definition": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}, comm)" % c,
          "includeAll": true,
          "label": "Communicator",
          "multi": true,
          "name": "comm",
          "query": {
            "query": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\", host=~\"$host\"%(selc)s}, comm)" % c,
            "refId": "comm"
          },
          "refresh": 2,
          "regex": "",
          "sort": 1,
          "type": "query"
        },
        {
          "allValue": ".*",
          "current": {},
          "datasource": {
            "type": "prometheus",
            "uid": "${datasource}"
          },
          "definition": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\"%(selc)s}, rank)" % c,
          "includeAll": true,
          "label": "Rank in communicator",
          "multi": true,
          "name": "rank",
          "query": {
            "query": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\"%(selc)s}, rank)" % c,
            "refId": "rank"
          },
          "refresh": 2,
          "regex": "",
          "sort": 1,
          "type": "query"
        },
        {
          "current": {
            "text": "%(dcgmDashboardUid)s" % c,
            "value": "%(dcgmDashboardUid)s" % c
          },
          "description": "uid of NVIDIA's dcgm-exporter dashboard (grafana.com 12239, uid Oxed_c6Wz as imported); its variables instance and gpu are passed",
          "hide": 0,
          "label": "DCGM dashboard uid",
          "name": "dcgm_dashboard",
          "query": "%(dcgmDashboardUid)s" % c,
          "type": "textbox"
        },
        {
          "name": "topk",
          "label": "Top ranks per panel",
          "type": "custom",
          "query": "%(perRankTopk)s,5,10,20,50,100" % c,
          "current": {
            "text": "%(perRankTopk)s" % c,
            "value": "%(perRankTopk)s" % c
          },
          "hide": 0,
          "includeAll": false,
          "multi": false,
          "description": "Per-rank panels plot this many ranks (the largest values)"
        }
      ]
    },
    "time": {
      "from": "now-1h",
      "to": "now"
    },
    "timezone": "",
    "title": "ncclscope: NCCL jobs",
    "uid": "%(dashboardUid)s" % c,
    "version": 2
  },
}
