"""Context: one profile's run in one process (a lane's or the foreground's): its size, deadline, results, notes and
failures, and which (workload, system) pairs this process measures.
"""
import time

from .base import log
from .profiles import PROFILES


def runs_of(ctx, systems):
    """How many runs ctx holds of these systems, over every workload."""
    return sum(len(ctx.results.get(wid, {}).get(name, [])) for wid in ctx.results for name in systems)


def exit_status(contexts):
    """The run's exit status from what its steps recorded: 1 when any profile's context holds a failure (each
    logged as a FAIL line), else 0. Every profile counts, whatever the options (a smoke run writes no docs)."""
    failures = [failure for ctx in contexts for failure in ctx.failures]
    for failure in failures:
        log("FAIL " + failure)
    return 1 if failures else 0


class Context:
    def __init__(self, args, size, profile_name, work):
        self.args = args
        self.size = dict(size, **PROFILES[profile_name]["overrides"].get(args.size, {}))
        self.profile_name = profile_name
        self.profile = PROFILES[profile_name]
        self.work = work
        self.deadline = time.time() + size["deadline"] if args.size == "smoke" else time.time() + args.budget
        self.results = {}   # workload id -> system -> [runs]
        self.notes = {}     # workload id -> system -> note
        self.failures = []
        self.only = None    # a background lane: the (workload, system) pairs it measures
        self.skip = set()   # the foreground: the pairs the background lanes measure
        self.lanes = []     # the background lanes' summaries (name, wall, cpu, measured)
        self.fronts = []    # what each emulator's TLS front relayed (front_report)

    def here(self, wid, system):
        """Whether this process measures workload wid on system: the development filters (--workloads,
        --systems) and the split between the foreground and the background lanes."""
        workloads, systems = getattr(self.args, "workloads", None), getattr(self.args, "systems", None)
        if workloads and wid not in workloads and wid.rstrip("abcde") not in workloads:
            return False
        if systems and system not in systems:
            return False
        if self.only is not None:
            return (wid, system) in self.only
        return (wid, system) not in self.skip

    def add(self, wid, system, run_result):
        self.results.setdefault(wid, {}).setdefault(system, []).append(run_result)

    def note(self, wid, system, text):
        self.notes.setdefault(wid, {})[system] = text

    def out_of_time(self):
        return time.time() > self.deadline
