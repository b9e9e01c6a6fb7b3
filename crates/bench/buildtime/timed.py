#!/usr/bin/env python3
"""Runs a command and, when it succeeds, prints "<wall seconds> <cpu seconds>" on stdout (cpu: user
+ system time of the command and every process it waited for, e.g. cargo and its rustc). The
command's own output goes to stderr. Exits with the command's status (printing nothing on failure)."""
import resource
import subprocess
import sys
import time

start = time.monotonic()
status = subprocess.run(sys.argv[1:], stdout=sys.stderr).returncode
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
if status == 0:
    print(f"{wall:.2f} {usage.ru_utime + usage.ru_stime:.2f}")
sys.exit(status)
