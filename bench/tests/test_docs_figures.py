"""docs/benchmarks.md's computed parts are what bench/summary.py computes from the reports in bench/results: the
summary paragraph, the goals and the losses table from the newest full run of each profile, and each dated note from
the reports its marker names. A figure typed by hand, or a report changed without the docs, fails here; the fix is
`python3 bench/summary.py --docs docs/benchmarks.md`.
"""
import copy
import os
import unittest

import summary

DOCS = os.path.join(os.path.dirname(summary.RESULTS), os.pardir, "docs", "benchmarks.md")


class DocsFiguresTests(unittest.TestCase):
    def setUp(self):
        with open(DOCS) as f:
            self.text = f.read()
        self.reports = summary.newest_full_reports()

    def test_the_newest_full_run_of_each_profile_is_found(self):
        self.assertEqual(sorted(r["profile"] for r in self.reports), ["lan", "wan"])
        for report in self.reports:
            self.assertEqual(report["size"], "full")

    def test_every_computed_part_of_the_docs_is_what_the_reports_say(self):
        for block in ("summary", "goals", "losses"):
            self.assertIn("<!-- bench:%s:begin -->" % block, self.text)
        self.assertTrue(summary.NOTE.search(self.text), "no dated note is marked")
        self.assertEqual(summary.docs_with_figures(self.text, self.reports), self.text,
                         "docs/benchmarks.md differs from its reports: run python3 bench/summary.py --docs docs/benchmarks.md")

    def test_a_changed_figure_is_seen(self):
        changed = copy.deepcopy(self.reports)
        wan = next(r for r in changed if r["profile"] == "wan")
        five = summary.find(wan, "5")
        five["systems"]["drivefs"]["summary"]["median"] *= 2
        self.assertNotEqual(summary.docs_with_figures(self.text, changed), self.text)

    def test_a_loss_is_listed_with_its_figures_and_a_win_is_not(self):
        wan = next(r for r in self.reports if r["profile"] == "wan")
        report = copy.deepcopy(wan)
        report["workloads"] = [copy.deepcopy(summary.find(wan, "1a"))]
        s = report["workloads"][0]["systems"]
        self.assertEqual(summary.losses([report]).count("\n"), 1, "a workload drivefs wins is not a loss")
        # between tuned rclone's figure and rclone's (rclone as installed is the slower of the two in 1a)
        s["drivefs"]["summary"]["median"] = s["rclone-tuned"]["summary"]["median"] * 1.05
        self.assertLess(s["drivefs"]["summary"]["median"], s["rclone"]["summary"]["median"])
        table = summary.losses([report])
        self.assertIn("| 1a ", table)
        self.assertIn("wan: slower than tuned rclone", table)
        self.assertIn(summary.human_s(s["drivefs"]["summary"]["median"]), table)

    def test_the_goals_say_met_or_missed_from_the_figures(self):
        wan = copy.deepcopy(next(r for r in self.reports if r["profile"] == "wan"))
        five = summary.find(wan, "5")
        five["systems"]["drivefs"]["summary"]["median"] = five["floor"]["seconds"] * 1.05
        self.assertIn("floor: met (1.05 times)", summary.goals([wan]))
        five["systems"]["drivefs"]["summary"]["median"] = five["floor"]["seconds"] * 1.5
        self.assertIn("floor: missed (1.50 times)", summary.goals([wan]))


if __name__ == "__main__":
    unittest.main()
