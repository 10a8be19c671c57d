"""The systems under test. SYSTEMS is their order in the tables; a mount system is a class in this package (mount.py
says what one provides); the reference (curl) has no class, its runs are in each workload module.
A new mount system: a MountSystem subclass (command, env, and finish_writes when it needs telling), a column
in SYSTEMS, and where it is constructed (cli.main for the host, lane_process for a namespace).
"""

SYSTEMS = ["drivefs", "rclone", "rclone-tuned", "reference-1", "reference-par"]
# Each system's column header in the tables.
TITLES = {"drivefs": "drivefs", "rclone": "rclone", "rclone-tuned": "rclone tuned", "reference-1": "reference, 1 stream",
          "reference-par": "reference, parallel"}
REFERENCES = ("reference-1", "reference-par")
