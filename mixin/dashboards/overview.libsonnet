// The ncclscope overview dashboard (Grafana 10+).
{
  dashboard(c):: {
    "__inputs": [
      {
        "name": "DS_PROMETHEUS",
        "label": "Prometheus",
        "description": "The Prometheus that scrapes ncclscope (and node_exporter)",
        "type": "datasource",
        "pluginId": "prometheus",
        "pluginName": "Prometheus"
      }
    ],
    "__requires": [
      {
        "type": "grafana",
        "id": "grafana",
        "name": "Grafana",
        "version": "10.0.0"
      },
      {
        "type": "datasource",
        "id": "prometheus",
        "name": "Prometheus",
        "version": "1.0.0"
      },
      {
        "type": "panel",
        "id": "stat",
        "name": "Stat",
        "version": ""
      },
      {
        "type": "panel",
        "id": "table",
        "name": "Table",
        "version": ""
      },
      {
        "type": "panel",
        "id": "timeseries",
        "name": "Time series",
        "version": ""
      }
    ],
    "uid": "ncclscope-overview",
    "id": null,
    "title": "ncclscope: NCCL jobs",
    "tags": [
      "ncclscope",
      "nccl"
    ],
    "description": "Which rank the others wait for, which communicator is stuck, what each link and NIC does. Needs the recording rules of rules/ (docs/rules-and-dashboards.md).",
    "editable": true,
    "graphTooltip": 1,
    "schemaVersion": 39,
    "version": 2,
    "refresh": "30s",
    "time": {
      "from": "now-1h",
      "to": "now"
    },
    "timezone": "",
    "links": [
      {
        "title": "DCGM dashboards",
        "type": "dashboards",
        "tags": [
          "dcgm"
        ],
        "asDropdown": true,
        "includeVars": false,
        "keepTime": true,
        "targetBlank": false,
        "icon": "external link",
        "url": "",
        "tooltip": ""
      }
    ],
    "annotations": {
      "list": []
    },
    "templating": {
      "list": [
        {
          "name": "datasource",
          "label": "Data source",
          "type": "datasource",
          "query": "prometheus",
          "current": {
            "selected": false,
            "text": "${DS_PROMETHEUS}",
            "value": "${DS_PROMETHEUS}"
          },
          "hide": 0
        },
        {
          "name": "job",
          "label": "Job (ncclscope_job)",
          "type": "query",
          "datasource": {
            "type": "prometheus",
            "uid": "${datasource}"
          },
          "query": {
            "query": "label_values(ncclscope_comm_info, ncclscope_job)",
            "refId": "job"
          },
          "definition": "label_values(ncclscope_comm_info, ncclscope_job)",
          "refresh": 2,
          "includeAll": true,
          "multi": true,
          "allValue": ".*",
          "current": {},
          "regex": "",
          "sort": 1
        },
        {
          "name": "host",
          "label": "Host",
          "type": "query",
          "datasource": {
            "type": "prometheus",
            "uid": "${datasource}"
          },
          "query": {
            "query": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\"}, host)",
            "refId": "host"
          },
          "definition": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\"}, host)",
          "refresh": 2,
          "includeAll": true,
          "multi": true,
          "allValue": ".*",
          "current": {},
          "regex": "",
          "sort": 1
        },
        {
          "name": "comm",
          "label": "Communicator",
          "type": "query",
          "datasource": {
            "type": "prometheus",
            "uid": "${datasource}"
          },
          "query": {
            "query": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\", host=~\"$host\"}, comm)",
            "refId": "comm"
          },
          "definition": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\", host=~\"$host\"}, comm)",
          "refresh": 2,
          "includeAll": true,
          "multi": true,
          "allValue": ".*",
          "current": {},
          "regex": "",
          "sort": 1
        },
        {
          "name": "rank",
          "label": "Rank in communicator",
          "type": "query",
          "datasource": {
            "type": "prometheus",
            "uid": "${datasource}"
          },
          "query": {
            "query": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\"}, rank)",
            "refId": "rank"
          },
          "definition": "label_values(ncclscope_comm_info{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\"}, rank)",
          "refresh": 2,
          "includeAll": true,
          "multi": true,
          "allValue": ".*",
          "current": {},
          "regex": "",
          "sort": 1
        },
        {
          "name": "dcgm_dashboard",
          "label": "DCGM dashboard uid",
          "type": "textbox",
          "query": "Oxed_c6Wz",
          "current": {
            "text": "Oxed_c6Wz",
            "value": "Oxed_c6Wz"
          },
          "hide": 0,
          "description": "uid of the DCGM exporter dashboard the GPU links open (NVIDIA's dashboard 12239 by default)"
        }
      ]
    },
    "panels": [
      {
        "id": 17,
        "type": "table",
        "title": "Hang culprits (NcclscopeHang)",
        "description": "One row per root cause of a hang (recording rule ncclscope:hang_culprit, rules/ncclscope-hang.yml): the culprit's global rank and host, the communicator, the class (process gone or frozen, mismatch, not_joined, kernel, link with the receiving rank and its NIC) and how long the communicator has been stuck. Empty while nothing hangs. docs/stall-detection.md.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 0,
          "y": 0,
          "w": 12,
          "h": 7
        },
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope:hang_culprit{ncclscope_job=~\"$job\", comm=~\"$comm\"}",
            "format": "table",
            "instant": true,
            "legendFormat": "{{comm}} {{global_rank}}"
          }
        ],
        "transformations": [
          {
            "id": "organize",
            "options": {
              "excludeByName": {
                "Time": true,
                "__name__": true,
                "job": true,
                "instance": true,
                "local_rank": true,
                "gpu_uuid": true,
                "culprit_global_rank": true,
                "culprit_host": true,
                "direction": true
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
        ]
      },
      {
        "id": 18,
        "type": "table",
        "title": "Where stalled ranks wait",
        "description": "One row per place a stalled rank's oldest operation waits (ncclscope_comm_wait_seconds, exported only while the communicator is past its adaptive stall threshold): class host (not launched), peer (whom, on which NIC, waiting or failed), kernel (launched, nothing pending on the network) or launched (not told apart), and for how long nothing completed there.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 12,
          "y": 0,
          "w": 12,
          "h": 7
        },
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope_comm_wait_seconds{ncclscope_job=~\"$job\", comm=~\"$comm\"}",
            "format": "table",
            "instant": true,
            "legendFormat": "{{comm}} {{global_rank}}"
          }
        ],
        "transformations": [
          {
            "id": "organize",
            "options": {
              "excludeByName": {
                "Time": true,
                "__name__": true,
                "job": true,
                "instance": true,
                "local_rank": true,
                "gpu_uuid": true
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
        ]
      },
      {
        "id": 1,
        "type": "stat",
        "title": "Ranks reporting",
        "description": "Processes of the job with ncclscope loaded whose metrics Prometheus has now (recording rule ncclscope:job_ranks_reporting). Fewer than the job's world size: a rank is down or not scraped.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 0,
          "y": 7,
          "w": 4,
          "h": 6
        },
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope:job_ranks_reporting{ncclscope_job=~\"$job\"}",
            "legendFormat": "{{ncclscope_job}}",
            "instant": true
          }
        ]
      },
      {
        "id": 2,
        "type": "stat",
        "title": "Stalled communicators",
        "description": "Communicators with at least one rank flagged by ncclscope's stall watch (an operation in flight longer than NCCLSCOPE_STALL_TIMEOUT_S). Non-zero: see the stall panels below and the NcclscopeCommStalled alert.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 4,
          "y": 7,
          "w": 4,
          "h": 6
        },
        "fieldConfig": {
          "defaults": {
            "unit": "short",
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
            }
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope:job_comms_stalled{ncclscope_job=~\"$job\"}",
            "legendFormat": "{{ncclscope_job}}",
            "instant": true
          }
        ],
        "options": {
          "colorMode": "background",
          "reduceOptions": {
            "calcs": [
              "lastNotNull"
            ]
          }
        }
      },
      {
        "id": 3,
        "type": "table",
        "title": "Straggler per communicator",
        "description": "The rank each communicator waits for (recording rule ncclscope:comm_straggler:rate1m): the largest lateness, i.e. how much shorter its collectives are than the slowest rank's. Clock-free: every duration is measured on one host. A lateness near zero means nobody is waited for.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 8,
          "y": 7,
          "w": 16,
          "h": 6
        },
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope:comm_straggler:rate1m{ncclscope_job=~\"$job\", comm=~\"$comm\"}",
            "format": "table",
            "instant": true,
            "legendFormat": "{{comm}} rank {{rank}}"
          }
        ],
        "transformations": [
          {
            "id": "organize",
            "options": {
              "excludeByName": {
                "Time": true,
                "__name__": true,
                "job": true,
                "instance": true,
                "kind": true
              },
              "renameByName": {
                "Value": "lateness per collective",
                "comm": "communicator",
                "rank": "late rank",
                "global_rank": "global rank"
              }
            }
          }
        ]
      },
      {
        "id": 4,
        "type": "timeseries",
        "title": "Lateness per rank",
        "description": "Per rank: the slowest rank's seconds per collective minus this rank's (ncclscope:comm_rank_lateness_seconds:rate1m). The rank with the largest lateness arrives last; the others wait that long in every collective.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 0,
          "y": 13,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope:comm_rank_lateness_seconds:rate1m{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"}",
            "legendFormat": "{{comm}} rank {{rank}} ({{host}})"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 5,
        "type": "timeseries",
        "title": "Seconds per collective per rank",
        "description": "Per rank and communicator: GPU/proxy-timed seconds inside collectives (waiting for peers included) over the collectives completed (ncclscope:comm_rank_seconds_per_op:rate1m).",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 12,
          "y": 13,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope:comm_rank_seconds_per_op:rate1m{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"}",
            "legendFormat": "{{comm}} rank {{rank}} ({{host}})"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 6,
        "type": "timeseries",
        "title": "Operation latency p50 / p99 per rank",
        "description": "Per process (global rank) and operation kind: quantiles of ncclscope_operation_duration_seconds (buckets 100 us to 10 s).",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 0,
          "y": 21,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "histogram_quantile(0.5, sum by (le, host, global_rank, kind) (rate(ncclscope_operation_duration_seconds_bucket{ncclscope_job=~\"$job\", host=~\"$host\"}[$__rate_interval])))",
            "legendFormat": "p50 global rank {{global_rank}} {{kind}}"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "B",
            "expr": "histogram_quantile(0.99, sum by (le, host, global_rank, kind) (rate(ncclscope_operation_duration_seconds_bucket{ncclscope_job=~\"$job\", host=~\"$host\"}[$__rate_interval])))",
            "legendFormat": "p99 global rank {{global_rank}} {{kind}}"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 7,
        "type": "timeseries",
        "title": "Bus bandwidth per communicator",
        "description": "nccl-tests' busbw per communicator: collective bytes times the bus factor over the ranks' mean time inside collectives (as ncclscope:comm_bus_bandwidth_bytes_per_second:rate1m, at the dashboard's rate interval).",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 12,
          "y": 21,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "Bps"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "sum by (ncclscope_job, comm) (rate(ncclscope_comm_bus_bytes_total{ncclscope_job=~\"$job\", comm=~\"$comm\"}[$__rate_interval])) / (sum by (ncclscope_job, comm) (rate(ncclscope_comm_operation_seconds_total{ncclscope_job=~\"$job\", comm=~\"$comm\", kind=\"coll\"}[$__rate_interval])) > 0)",
            "legendFormat": "{{comm}}"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 8,
        "type": "timeseries",
        "title": "Oldest operation in flight per rank",
        "description": "Age of the oldest operation (collective or send/recv) each rank has in flight per communicator. It grows without bound on the ranks waiting in a hang; the rank that stopped issuing has nothing in flight.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 0,
          "y": 29,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "s"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope_comm_oldest_in_flight_age_seconds{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"}",
            "legendFormat": "{{comm}} rank {{rank}} ({{host}})"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 9,
        "type": "timeseries",
        "title": "Sequence lag by kind (collective and point-to-point)",
        "description": "How many operations of each kind (coll: collectives issued; p2p: sends and receives started) a rank is behind the furthest rank of its communicator (ncclscope:comm_rank_seq_lag). In a hang the rank that stopped issuing stays behind.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 12,
          "y": 29,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope:comm_rank_seq_lag{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"}",
            "legendFormat": "{{comm}} {{kind}} rank {{rank}} ({{host}})"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 10,
        "type": "timeseries",
        "title": "Operations in flight and stall flags",
        "description": "Operations in flight per rank (A) and ranks flagged stalled by ncclscope's stall watch (B), per communicator.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 0,
          "y": 37,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "ncclscope_comm_in_flight_operations{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"}",
            "legendFormat": "in flight {{comm}} rank {{rank}}"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "B",
            "expr": "sum by (comm) (ncclscope_comm_stalled{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"})",
            "legendFormat": "stalled ranks {{comm}}"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 11,
        "type": "timeseries",
        "title": "Operations per second by kind",
        "description": "Completed operations per second per rank and kind (coll, p2p): a hang shows as a drop to zero, for point-to-point traffic too.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 12,
          "y": 37,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "ops"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "sum by (comm, rank, kind) (rate(ncclscope_comm_operations_total{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\", rank=~\"$rank\"}[$__rate_interval]))",
            "legendFormat": "{{comm}} {{kind}} rank {{rank}}"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 12,
        "type": "timeseries",
        "title": "NIC throughput (ncclscope)",
        "description": "Bytes sent and received per NIC and host through ncclscope's net plugin.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 0,
          "y": 45,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "Bps"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "sum by (host, nic) (rate(ncclscope_nic_sent_bytes_total{ncclscope_job=~\"$job\", host=~\"$host\"}[$__rate_interval]))",
            "legendFormat": "sent {{host}} {{nic}}"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "B",
            "expr": "sum by (host, nic) (rate(ncclscope_nic_received_bytes_total{ncclscope_job=~\"$job\", host=~\"$host\"}[$__rate_interval]))",
            "legendFormat": "received {{host}} {{nic}}"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 13,
        "type": "timeseries",
        "title": "IB port traffic of the job's NICs (node_exporter)",
        "description": "node_exporter's InfiniBand port counters (node_infiniband_*, --collector.infiniband) of the NICs ncclscope uses, joined by host and device (ncclscope's nic label is the verbs device name). Needs a host label on node_exporter's series equal to ncclscope's (see docs/rules-and-dashboards.md). Port traffic above ncclscope's is other traffic sharing the port.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 12,
          "y": 45,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "Bps"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "sum by (host, nic, port) (label_replace(rate(node_infiniband_port_data_transmitted_bytes_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"}",
            "legendFormat": "port transmitted {{host}} {{nic}}/{{port}}"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "B",
            "expr": "sum by (host, nic, port) (label_replace(rate(node_infiniband_port_data_received_bytes_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"}",
            "legendFormat": "port received {{host}} {{nic}}/{{port}}"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 14,
        "type": "timeseries",
        "title": "NIC errors: ncclscope and IB port counters",
        "description": "Errors per NIC: ncclscope's own count (A; by kind at NCCLSCOPE_METRICS_LEVEL=detailed) next to node_exporter's port counters for the same device (symbol errors, link downed, receive errors).",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 0,
          "y": 53,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "sum by (host, nic) (increase(ncclscope_nic_errors_total{ncclscope_job=~\"$job\", host=~\"$host\"}[$__rate_interval]))",
            "legendFormat": "ncclscope {{host}} {{nic}}"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "B",
            "expr": "sum by (host, nic, port) (label_replace(increase(node_infiniband_symbol_error_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"}",
            "legendFormat": "symbol errors {{host}} {{nic}}/{{port}}"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "C",
            "expr": "sum by (host, nic, port) (label_replace(increase(node_infiniband_link_downed_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"}",
            "legendFormat": "link downed {{host}} {{nic}}/{{port}}"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "D",
            "expr": "sum by (host, nic, port) (label_replace(increase(node_infiniband_port_errors_received_total{host=~\"$host\"}[$__rate_interval]), \"nic\", \"$1\", \"device\", \"(.+)\")) and on (host, nic) ncclscope_nic_info{ncclscope_job=~\"$job\", host=~\"$host\"}",
            "legendFormat": "receive errors {{host}} {{nic}}/{{port}}"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 15,
        "type": "timeseries",
        "title": "Dropped profiler events",
        "description": "Profiler events ncclscope dropped, per communicator rank (A) and outside any communicator (B). Always present (zero when nothing was dropped); anything above zero means the metrics under-count.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 12,
          "y": 53,
          "w": 12,
          "h": 8
        },
        "fieldConfig": {
          "defaults": {
            "unit": "short"
          },
          "overrides": []
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "sum by (host, global_rank, comm, rank) (increase(ncclscope_comm_dropped_events_total{ncclscope_job=~\"$job\", host=~\"$host\", comm=~\"$comm\"}[$__rate_interval]))",
            "legendFormat": "{{comm}} rank {{rank}} ({{host}})"
          },
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "B",
            "expr": "sum by (host, global_rank) (increase(ncclscope_profiler_dropped_events_total{ncclscope_job=~\"$job\", host=~\"$host\"}[$__rate_interval]))",
            "legendFormat": "outside communicators, global rank {{global_rank}} ({{host}})"
          }
        ],
        "options": {
          "legend": {
            "displayMode": "table",
            "placement": "right",
            "calcs": [
              "lastNotNull",
              "max"
            ]
          },
          "tooltip": {
            "mode": "multi",
            "sort": "desc"
          }
        }
      },
      {
        "id": 16,
        "type": "table",
        "title": "Ranks and GPUs (links to DCGM)",
        "description": "One row per process: host, global and local rank and the GPU's UUID. Click a GPU UUID to open the DCGM dashboard (uid in the dcgm_dashboard variable) for that GPU over the same time range.",
        "datasource": {
          "type": "prometheus",
          "uid": "${datasource}"
        },
        "gridPos": {
          "x": 0,
          "y": 61,
          "w": 24,
          "h": 7
        },
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
                      "title": "DCGM dashboard of ${__data.fields.gpu_uuid}",
                      "url": "/d/${dcgm_dashboard}/?var-UUID=${__data.fields.gpu_uuid}&var-Hostname=${__data.fields.host}&${__url_time_range}"
                    }
                  ]
                }
              ]
            }
          ]
        },
        "targets": [
          {
            "datasource": {
              "type": "prometheus",
              "uid": "${datasource}"
            },
            "refId": "A",
            "expr": "max by (ncclscope_job, host, global_rank, local_rank, gpu_uuid) (ncclscope_process_info{ncclscope_job=~\"$job\", host=~\"$host\"})",
            "format": "table",
            "instant": true,
            "legendFormat": "{{host}} {{global_rank}}"
          }
        ],
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
        ]
      }
    ]
  },
}
