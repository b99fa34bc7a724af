"""The reporter the Python test scripts share: each check printed as it is made ("ok   what" or "FAIL what"),
the failed ones kept, and one closing line with the exit status, so that a failing check always ends in a non-zero
exit whatever script made it.

    from checks import check, summary
    check(rc == 0, f"the job exits 0 (got {rc})")
    sys.exit(summary(context=f"logs in {work}"))
"""


class Checks:
    """One script's checks. PASSED and FAILED are the marks printed before each check's description; with PASSED
    None only the failed checks are printed (for checks described by what their failure means)."""

    def __init__(self, passed="ok   ", failed="FAIL "):
        self.passed_mark, self.failed_mark = passed, failed
        self.count = 0
        self.failures = []

    def check(self, ok, what):
        """Prints WHAT with the mark OK earns and keeps it if it failed. Returns OK, so that a caller can skip the
        checks that depend on this one."""
        self.count += 1
        if not ok or self.passed_mark is not None:
            print((self.passed_mark if ok else self.failed_mark) + what, flush=True)
        if not ok:
            self.failures.append(what)
        return ok

    def summary(self, context=None, passed=None):
        """The exit status: 1 after printing "FAIL: N check(s) failed" (and CONTEXT, such as where the logs are) if
        any check failed; else 0, after printing PASSED if given."""
        if self.failures:
            print(f"FAIL: {len(self.failures)} check(s) failed" + (f" ({context})" if context else ""), flush=True)
            return 1
        if passed:
            print(passed, flush=True)
        return 0


# The checks of a script that prints every check with the default marks.
_checks = Checks()
check = _checks.check
summary = _checks.summary
