"""bench/cpu.py: CPU spent during a stretch, over the machine and by process group."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time

from bench.cpu import MACHINE, cpu_spent, names

# Started and waiting, it spends 0.3 s of CPU when told, says so, and waits to be ended
BUSY = """
import sys, time
print("ready", flush=True)
sys.stdin.readline()
started = time.process_time()
while time.process_time() - started < 0.3:
    pass
print("done", flush=True)
sys.stdin.read()
"""


# A name no other process on the machine has (the suite's own Celery workers run beside it)
MARK = "bench-cpu-test-" + secrets.token_hex(4)
GROUPS = ((MARK, "marked"),)


def test_each_group_is_charged_its_own_processes_cpu() -> None:
    # Given a process whose command line names its group, alive before and after the stretch
    worker = subprocess.Popen(
        [sys.executable, "-c", BUSY, MARK],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdin and worker.stdout
    try:
        assert worker.stdout.readline() == "ready\n"
        with cpu_spent(GROUPS) as spent:
            # When it and this process (the driver) each spend 0.3 s of CPU
            worker.stdin.write("go\n")
            worker.stdin.flush()
            started = time.process_time()
            while time.process_time() - started < 0.3:
                pass
            assert worker.stdout.readline() == "done\n"
        figures = spent()
    finally:
        worker.communicate("")
    # Then each is charged to its own group, and the machine to at least both
    assert set(figures) == {*names(GROUPS), MACHINE} == {"marked", "driver", "other", MACHINE}
    assert 0.28 <= figures["driver"] <= 0.45
    assert 0.28 <= figures["marked"] <= 0.45
    assert figures[MACHINE] >= figures["driver"] + figures["marked"] - 0.05
