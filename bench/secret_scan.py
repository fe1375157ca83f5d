"""Recall and false-positive rate of workflows.secrets on the labelled corpus, plus scan times.

Run: .venv/bin/python bench/secret_scan.py [--all]   (the corpus is fake; misses are printed in
full, false positives the first 5 of each category unless --all)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workflows.examples import valid_packet
from workflows.secrets import find_secrets, scan_text

CORPUS = Path(__file__).parent / "secret_corpus"


def load(name: str) -> list[dict[str, str]]:
    with (CORPUS / f"{name}.jsonl").open() as lines:
        return [json.loads(line) for line in lines]


def main() -> None:
    started = time.perf_counter()
    scan_text("warm-up")  # the first call loads detect-secrets
    print(f"first scan (loads detect-secrets): {(time.perf_counter() - started) * 1000:.1f} ms")

    secrets, clean = load("secrets"), load("clean")
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses, wrong_kind = [], []
    for index, row in enumerate(secrets):
        kinds = scan_text(row["text"])
        hits[row["category"]][1] += 1
        if kinds:
            hits[row["category"]][0] += 1
            if row["kind"] not in kinds:
                wrong_kind.append((index, row["kind"], kinds))
        else:
            misses.append((index, row["category"], row["text"]))
    flagged: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    false_positives: dict[str, list[tuple[int, list[str], str]]] = defaultdict(list)
    for index, row in enumerate(clean):
        kinds = scan_text(row["text"])
        flagged[row["category"]][1] += 1
        if kinds:
            flagged[row["category"]][0] += 1
            false_positives[row["category"]].append((index, kinds, row["text"]))

    print(f"\nsecrets: {len(secrets)}   clean: {len(clean)}")
    for category, (found, total) in sorted(hits.items()):
        print(f"  recall {category:<24} {found:>4}/{total:<4} {found / total:7.1%}")
    caught = sum(found for found, _ in hits.values())
    share = caught / len(secrets)
    print(f"  recall overall                  {caught:>4}/{len(secrets):<4} {share:7.1%}")
    for category, (found, total) in sorted(flagged.items()):
        print(f"  false positives {category:<15} {found:>4}/{total:<4} {found / total:7.1%}")
    wrong = sum(found for found, _ in flagged.values())
    print(f"  false positives overall         {wrong:>4}/{len(clean):<4} {wrong / len(clean):7.1%}")
    for index, category, text in misses:
        print(f"  MISS secrets[{index}] {category}: {text!r}")
    for index, expected, kinds in wrong_kind:
        print(f"  KIND secrets[{index}] expected {expected!r}, got {kinds}")
    shown = 5 if "--all" not in sys.argv else None  # the first few of each category
    for category, rows in sorted(false_positives.items()):
        for index, kinds, text in rows[:shown]:
            print(f"  FP   clean[{index}] {category} {kinds}: {text!r}")
        if shown is not None and len(rows) > shown:
            print(f"  FP   ... {len(rows) - shown} more {category} (--all shows every one)")

    texts = [row["text"] for row in secrets + clean]
    per_string = timed(lambda: [scan_text(text) for text in texts]) / len(texts)
    print(f"\nscan_text: {per_string * 1e6:.0f} µs per string (mean of {len(texts)})")
    packet = valid_packet()
    per_packet = timed(lambda: find_secrets(packet))
    print(f"find_secrets on the valid example packet: {per_packet * 1000:.2f} ms")
    long_text = " ".join(row["text"] for row in clean[:341])  # the same log as before
    per_log = timed(lambda: scan_text(long_text))
    print(f"scan_text on {len(long_text)} chars of log: {per_log * 1000:.1f} ms")


def timed(work: object, repeat: int = 5) -> float:
    """Median wall time of one call of work, in seconds."""
    assert callable(work)
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


if __name__ == "__main__":
    main()
