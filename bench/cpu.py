"""CPU time spent during a stretch of a benchmark, for the whole machine and by process group
(Linux /proc): where a case's CPU goes, the service's and its floor's side by side.

A group's figure is the CPU its processes alive at both ends used in between: a process that
exits in between is not counted in its group (the machine's total counts it).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
MACHINE = "machine"
# Each process's group, by its command line: the first name found in it wins
GROUPS = (
    ("bench.platform_sink", "sink"),
    ("celery", "celery"),
    ("postgres", "postgres"),
    ("redis-server", "redis"),
)
Groups = tuple[tuple[str, str], ...]


def names(groups: Groups = GROUPS) -> tuple[str, ...]:
    """Every group a measure reports, the driver (this process) and `other` included."""
    return (*(group for _, group in groups), "driver", "other")


def _machine_seconds() -> float:
    """CPU seconds the machine has spent busy (user, nice, system, irq, softirq) since boot."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = map(int, fields[:7])
    return (user + nice + system + irq + softirq) / TICK


def _group_of(pid: int, command: str, groups: Groups) -> str:
    if pid == os.getpid():
        return "driver"
    return next((group for name, group in groups if name in command), "other")


def _per_group(groups: Groups) -> Counter[str]:
    """CPU seconds each group's live processes have spent."""
    spent: Counter[str] = Counter()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone since the listing
            continue
        # utime and stime are fields 14 and 15; the command name before them may hold spaces
        after_name = stat[stat.rindex(")") + 2 :].split()
        own = (int(after_name[11]) + int(after_name[12])) / TICK
        spent[_group_of(int(entry.name), command or stat, groups)] += own
    return spent


@contextmanager
def cpu_spent(groups: Groups = GROUPS) -> Iterator[Callable[[], dict[str, float]]]:
    """Measure the block; the callable then gives CPU seconds by group and `machine`."""
    machine, before = _machine_seconds(), _per_group(groups)
    figures: dict[str, float] = {}
    yield lambda: figures
    after = _per_group(groups)
    figures.update({group: after[group] - before[group] for group in names(groups)})
    figures[MACHINE] = _machine_seconds() - machine
