"""`escalate check` against the design document's reference checker, same interpreter (#16.5).

A shell loop pays a check's start on every pass, so the figure is wall time per run: both
commands alternate, RUNS times each (default 10), after one warm-up run of each. The CPU
time (user + system) is printed too: on a shared machine it moves less than the wall time.

Run: .venv/bin/python bench/check_cli.py [RUNS]
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support is not installed; the seed's reader lives there

from tests.support.reference_checker import SEED_NAME, SEEDS, extract_reference  # noqa: E402
from workflows.examples import valid_packet  # noqa: E402

ESCALATE = str(Path(sys.executable).parent / "escalate")


def timed(command: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # a command that failed timed nothing worth comparing: CalledProcessError names it
    subprocess.run(command, capture_output=True, check=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu


def compare(label: str, ours: list[str], reference: list[str], runs: int) -> None:
    timed(ours), timed(reference)  # warm the page cache and .pyc files, as a loop's 2nd pass
    mine: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for _ in range(runs):
        mine.append(timed(ours))
        theirs.append(timed(reference))
    for measure, index in (("wall", 0), ("cpu", 1)):
        ours_ms = [run[index] * 1000 for run in mine]
        ref_ms = [run[index] * 1000 for run in theirs]
        for name, times in (("escalate check", ours_ms), ("reference", ref_ms)):
            print(
                f"{label:<12} {measure:<4} {name:<15} median {statistics.median(times):6.1f} ms "
                f"(min {min(times):.1f}, max {max(times):.1f}) over {runs} runs"
            )
        ratio = statistics.median(ours_ms) / statistics.median(ref_ms)
        print(f"{label:<12} {measure:<4} ratio           {ratio:.2f}x (target <= 2.5x)")


def main() -> None:
    report(max(10, int(sys.argv[1]) if len(sys.argv) > 1 else 10))


def report(runs: int) -> None:
    seed = SEEDS / SEED_NAME
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "packet_check.py"
        script.write_text(extract_reference(seed.read_text(encoding="utf-8")), encoding="utf-8")
        packet = Path(folder) / "packet.json"
        packet.write_text(json.dumps(valid_packet()), encoding="utf-8")
        reference = [sys.executable, str(script)]
        compare(
            "--make-valid", [ESCALATE, "check", "--make-valid"], [*reference, "--make-valid"], runs
        )
        compare("packet file", [ESCALATE, "check", str(packet)], [*reference, str(packet)], runs)


if __name__ == "__main__":
    main()
