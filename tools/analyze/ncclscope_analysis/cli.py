"""The command line: arguments, output, exit status. main() never lets an exception out (SystemExit aside:
argparse exits 2 on a usage error, 0 after --help); NCCLSCOPE_ANALYZE_DEBUG=1 prints the traceback of an
internal error.
"""
import argparse
import io
import json
import os
import sys
import traceback

from .dumps import BadInput, default_jobs, flight_recorder, load_all
from .report import analyze, job_status, print_text, problem_kind, to_json
from .trace import chrome_trace
from .version import version

HEALTHY, HANG, BAD_INPUT, INTERNAL_ERROR, OUTPUT_ERROR, CANNOT_TELL, STRAGGLER = 0, 1, 2, 3, 4, 5, 6
PROBLEM = HANG  # the name before stragglers had their own status
EXIT_STATUS = ("Exit status: 0 healthy (recovered stalls included); 1 hang: a communicator stopped (a rank behind, "
               "dead, missing, stuck, or a mismatched collective); 6 straggler: slow, not stuck (no hang found); "
               "2 bad input or usage (the file is named, with the field, or why it cannot be read; dumps of "
               "several jobs without --job or --all-jobs); 3 internal error (a bug: NCCLSCOPE_ANALYZE_DEBUG=1 shows "
               "the traceback); 4 the report or trace could not be written (disk full, closed pipe); 5 no problem "
               "found, but some communicator could not show a hang (no KernelCh events and no ncclscope "
               "connection: operations looked done once enqueued).")


class OutputError(Exception):
    pass


def _say(msg):
    """One line on stderr: control characters and unpaired surrogates (from file or key names) escaped."""
    line = "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in str(msg))
    try:
        if sys.stderr is not None:  # print(file=None) would write to stdout
            print(f"ncclscope-analyze: {line}", file=sys.stderr)
    except (OSError, ValueError):  # stderr closed too: the exit status is all that is left
        pass


def _silence_stdout():
    """After a failed write to stdout: point fd 1 at /dev/null, so that the flush at exit cannot fail again."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


def _emit(text):
    if sys.stdout is None:  # started with fd 1 closed (>&-)
        raise OutputError("cannot write the report: stdout is closed")
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")  # a non-UTF-8 locale cannot fail on a host name
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (| head): not worth a message
        _silence_stdout()
        raise OutputError(None)
    except OSError as e:
        _silence_stdout()
        raise OutputError(f"cannot write the report: {e.strerror or e}")


def _write_trace(path, comms):
    for ranks in comms.values():  # the recorders are read only now, one dump at a time
        for d in ranks.values():
            d["flight_recorder"] = dict(d.get("flight_recorder") or {}, completed=flight_recorder(d),
                                        in_flight=d["in_flight"])
    text = json.dumps(chrome_trace(comms))
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror or e}")


def _positive(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 1024:
        raise argparse.ArgumentTypeError(f"want a number of workers from 1 to 1024, got {text!r}")
    return n


def _parser():
    return argparse.ArgumentParser(
        prog="ncclscope-analyze",
        description="Post-mortem of an NCCL job from every rank's ncclscope dumps (ncclscope-comm-*.json.gz, "
                    "and the older ncclscope-comm-*.json): which rank is stuck, dead or slow, where, what to do "
                    "next, and what each communicator did. Parses each dump's summary only (the flight recorders "
                    "only for --trace; their gzip members are checked whole for every run), in parallel worker "
                    "processes. Only regular files are read; one "
                    "unreadable or malformed dump fails the run (exit 2).",
        epilog=EXIT_STATUS)


def _run(argv):
    ap = _parser()
    ap.add_argument("--version", action="version", version=f"ncclscope-analyze {version()}")
    ap.add_argument("paths", nargs="+", metavar="DIR_OR_FILE", help="dump directories (searched recursively) or files")
    ap.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    ap.add_argument("--trace", metavar="OUT.json", help="also write a merged Chrome/Perfetto trace of every rank")
    ap.add_argument("--jobs", "-j", type=_positive, default=None, metavar="N",
                    help=f"worker processes reading dumps (default: the CPUs this process may use, {default_jobs()})")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--job", metavar="ID", help="analyse only the dumps of this job id (the dumps' job_id, "
                                                    "NCCLSCOPE_JOB_ID; '' for dumps without one)")
    which.add_argument("--all-jobs", action="store_true",
                       help="analyse the dumps of several jobs together (by default dumps of more than one job id "
                            "are refused, listing the jobs)")
    args = ap.parse_args(argv)
    comms = load_all(args.paths, warn=lambda msg: _say(f"warning: {msg}"), jobs=args.jobs, job=args.job,
                     all_jobs=args.all_jobs)
    report = analyze(comms)
    if args.trace:
        _write_trace(args.trace, comms)
    if args.json:
        _emit(json.dumps(to_json(report), indent=1, default=str) + "\n")
    else:
        out = io.StringIO()
        print_text(report, out)
        _emit(out.getvalue())
    return exit_status(report)


def exit_status(report):
    kind = problem_kind(report)
    if kind is not None:
        return HANG if kind == "hang" else STRAGGLER
    return CANNOT_TELL if job_status(report) == "cannot_tell" else HEALTHY


def main(argv=None):
    try:
        return _run(argv)
    except BadInput as e:
        _say(e)
        return BAD_INPUT
    except OutputError as e:
        if e.args[0]:
            _say(e)
        return OUTPUT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug (RecursionError and MemoryError included): one line, not a traceback
        if os.environ.get("NCCLSCOPE_ANALYZE_DEBUG", "0") not in ("", "0"):
            traceback.print_exc()
        first = (str(e).splitlines() or [""])[0][:200]
        _say(f"internal error: {type(e).__name__}: {first} (NCCLSCOPE_ANALYZE_DEBUG=1 shows the traceback)")
        return INTERNAL_ERROR
