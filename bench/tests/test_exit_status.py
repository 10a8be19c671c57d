"""The harness's exit status: a step that recorded a failure makes the run exit 1, in any profile, with or
without --docs (make bench-smoke writes no docs and must still fail). make bench-smoke runs these first:
python3 -m unittest discover -s bench/tests -t bench
"""
import argparse
import contextlib
import io
import unittest

from drivebench.cli import conclude
from drivebench.context import exit_status


class Recorded:
    """A profile's context as the run leaves it: only its failures matter here."""

    def __init__(self, *failures):
        self.failures = list(failures)


def quietly(call, *arguments):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = call(*arguments)
    return code, printed.getvalue()


class ExitStatusTests(unittest.TestCase):
    def test_no_failure_is_zero(self):
        self.assertEqual(quietly(exit_status, [Recorded(), Recorded()]), (0, ""))

    def test_a_failure_in_any_profile_is_one_and_logged(self):
        code, printed = quietly(exit_status, [Recorded("drivefs side (main): a read returned wrong bytes"), Recorded()])
        self.assertEqual(code, 1)
        self.assertIn("FAIL drivefs side (main): a read returned wrong bytes", printed)
        code, printed = quietly(exit_status, [Recorded(), Recorded("lane reads: timed out")])
        self.assertEqual(code, 1)
        self.assertIn("FAIL lane reads: timed out", printed)

    def test_a_smoke_run_without_docs_fails_when_a_step_failed(self):
        # make bench-smoke: no --docs. Before, the status was set only inside the --docs branch (and only from the
        # last profile), so this run exited 0.
        args = argparse.Namespace(docs=None)
        code, printed = quietly(conclude, args, [Recorded("drivefs side (writes): a tool failed"), Recorded()], [])
        self.assertEqual(code, 1)
        self.assertIn("FAIL drivefs side (writes): a tool failed", printed)
        self.assertEqual(quietly(conclude, args, [Recorded(), Recorded()], [])[0], 0)


if __name__ == "__main__":
    unittest.main()
