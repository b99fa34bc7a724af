"""Shared by the rule tests that generate rules/ from mixin/ with a configuration and run promtool unit tests on
them (check_intervals.py, check_pauses.py)."""
import json
import os
import subprocess


def labels(**kw):
    return "{" + ",".join(f'{k}="{v}"' for k, v in kw.items()) + "}"


def have_tools():
    """promtool (Debian's prometheus) and jsonnet are installed."""
    return subprocess.run(["sh", "-c", "command -v promtool && command -v jsonnet"], capture_output=True).returncode == 0


def run(root, out, config, tests, interval_s):
    """Generates rules/ into `out` with `config`, checks them and runs `tests` (promtool unit tests) evaluated
    every interval_s. Returns (passed, log)."""
    gen = subprocess.run([os.path.join(root, "scripts/gen-mixin.sh"), out, "--tla-code", "config=" + json.dumps(config)],
                         capture_output=True, text=True)
    if gen.returncode != 0:
        return False, gen.stdout + gen.stderr
    test = {"rule_files": [f"{out}/rules/ncclscope-recording.yml", f"{out}/rules/ncclscope-alerts.yml",
                           f"{out}/rules/ncclscope-hang.yml"],
            "evaluation_interval": f"{interval_s}s", "tests": tests}
    path = os.path.join(out, "generated_test.yml")
    with open(path, "w") as f:
        json.dump(test, f, indent=1)  # JSON is YAML
    check = subprocess.run(["promtool", "check", "rules"] + test["rule_files"], capture_output=True, text=True)
    r = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True)
    return check.returncode == 0 and r.returncode == 0, check.stdout + r.stdout + r.stderr
