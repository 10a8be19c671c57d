"""The workloads, one module per family: reads (1-4), writes (5-7), scale (8), backlog (9), save_loop (10),
index_quota (11); catalogue.py names them for the tables. Each module measures its workloads on a mount system
(run_...(ctx, emulator, system, ...)) and on the reference (run_reference_... or note_reference, which says why
the reference has no figure). A new workload: a module here, a row in catalogue.WORKLOADS, a call where its part
runs (cli.main for drivefs and the reference, lane_process.lane_measure for rclone), and its lane part in
lanes.workload_part when it needs a drive of its own.
"""
