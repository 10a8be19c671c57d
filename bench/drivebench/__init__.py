"""The benchmark harness's parts (bench/harness.py is its entry point and command line).

Where what lives:
- cli: the command line and the run (profiles, parts, lanes, reports); lane_process: a lane as a process of its
  own (`harness.py inner`), rclone's in a private namespace.
- workloads/: one module per workload family (reads 1-4, writes 5-7, scale 8, backlog 9, save_loop 10,
  index_quota 11) and catalogue (the ids and names the tables show).
- systems/: the systems under test: mount (MountSystem), drivefs, rclone (its variants); the reference (curl)
  is measured inside each workload module.
- profiles (lan, wan: shaping and limits), sizes (full, smoke), lanes (background lanes, the measurement token,
  the books), quota (Drive's limits, units, the write limit's floor).
- emulator (the emulator, its TLS front, certificates, state copies), drive_api (the one Drive client: urllib
  for the harness's checks, curl for the reference's measured requests), data (the seeded trees, WriteData).
- measure (one measured run, its figures), context (one profile's results in one process), report (JSON,
  markdown tables, charts), fmt (figures as printed), base (errors, log, paths).

Imports go one way: base and fmt at the bottom, then the emulator, Drive client, measurement and data, the
systems, the workloads, and lane_process and cli at the top.
"""
