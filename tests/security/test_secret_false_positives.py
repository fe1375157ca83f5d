"""Secret refusal without false alarms (issue #14, item 13): ordinary values are accepted.

Reported: 43 of 300 random temporary paths like /tmp/acc-gitprobe-d45m9i64/runs/a were refused
as `snapshot.fingerprint.path: contains a secret (high-entropy string)`. The clean corpus
(bench/secret_corpus/clean.jsonl, from bench/make_secret_corpus.py) holds thousands of
real-world non-secrets by category; `.venv/bin/python bench/secret_scan.py` prints the figures.
"""

from __future__ import annotations

import json
import random
import string
from collections import Counter
from pathlib import Path

import pytest

from workflows.examples import valid_packet
from workflows.intake import admit
from workflows.secrets import find_secrets, scan_text

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "secret_corpus"
MAX_FALSE_POSITIVES = 0.005
TEMPFILE = string.ascii_lowercase + string.digits + "_"  # the characters of mkdtemp() names
# Where mkdtemp() names land: /tmp, a folder made by mkdtemp() itself, pytest's basetemp,
# a macOS $TMPDIR, a Windows %TEMP%.
TEMP_ROOTS = (
    "/tmp",
    "/tmp/tmp{name}",
    "/tmp/pytest-of-runner/pytest-{n}/test_snapshot_fingerprint0",
    "/private/var/folders/{two}/{folder}0000gn/T",
    "C:\\Users\\runner\\AppData\\Local\\Temp",
)


def refusals(path: str) -> tuple[str, ...]:
    """What intake says about a request whose git fingerprint lives at `path`."""
    request = {"packet": valid_packet(), "snapshot": {"fingerprint": {"kind": "git", "path": path}}}
    return admit(request, find_secrets=find_secrets).problems


def test_the_reported_path_shape_is_accepted() -> None:
    # Given the path of the report and 300 seeded paths of its shape (10 mixed-case letters and
    # digits, which gave the report's rate of refusals)
    rng = random.Random(14)
    alnum = string.ascii_letters + string.digits
    paths = ["/tmp/acc-gitprobe-d45m9i64/runs/a"] + [
        f"/tmp/acc-gitprobe-{''.join(rng.choices(alnum, k=10))}/runs/a" for _ in range(300)
    ]
    # When each is the fingerprint path of an otherwise valid request
    refused = {path: problems for path in paths if (problems := refusals(path))}
    # Then every one is accepted
    assert refused == {}


def test_mkdtemp_paths_under_every_temp_root_are_accepted() -> None:
    # Given 300 seeded mkdtemp()-named folders under the temporary roots real runs use
    rng = random.Random(1413)

    def name() -> str:
        return "".join(rng.choices(TEMPFILE, k=8))

    paths = []
    for index in range(300):
        root = TEMP_ROOTS[index % len(TEMP_ROOTS)].format(
            name=name(), n=rng.randint(0, 999), two=name()[:2], folder=name() + name() + name()[:6]
        )
        sep = "\\" if root.startswith("C:") else "/"
        paths.append(sep.join((root, f"acc-gitprobe-{name()}", "runs", "a")))
    # When each is the fingerprint path of an otherwise valid request
    refused = {path: problems for path in paths if (problems := refusals(path))}
    # Then every one is accepted
    assert refused == {}


def test_false_positives_are_at_most_half_a_percent_in_every_category() -> None:
    # Given the clean corpus: thousands of non-secrets in twenty-odd categories
    with (CORPUS / "clean.jsonl").open() as lines:
        clean = [json.loads(line) for line in lines]
    totals = Counter(row["category"] for row in clean)
    # When every line is scanned
    flagged = Counter(row["category"] for row in clean if scan_text(row["text"]))
    # Then at most 0.5 % of each category is refused, and so of the whole
    rates = {category: flagged[category] / total for category, total in totals.items()}
    assert {c: f"{r:.1%}" for c, r in rates.items() if r > MAX_FALSE_POSITIVES} == {}
    assert flagged.total() / len(clean) <= MAX_FALSE_POSITIVES
    assert len(clean) >= 5000 and len(totals) >= 20


@pytest.mark.parametrize(
    "text",
    [
        "/private/var/folders/mt/4j9wtmndc_iv7dqmv0j61t0000gn/T/pytest-of-root/pytest-64/test_x0",
        "/tmp/tmp7u9hdxqo/acc-gitprobe-59_yx3nj/runs/a",
        "/runs/01MA7PRHS32WY5KCTSARHRWHZG/artifacts",
        "s3://acme-logs/beat/2025-11-24/01KB95QK7KXENTAYFBNCTMJNZJ.json.gz",
        "https://acme.slack.com/archives/CXH83KRK7MH/p1759206433251533",
        "pod/escalation-worker-q94gf2d5c5-ck76s in CrashLoopBackOff",
        "Message-ID: <CATFpE15QXVz5-k_4ETyl7dpDRMzc0ClazjcACYfhCH_X@mail.gmail.com>",
        "admin_graphql_api_id Z2lkOi8vc2hvcGlmeS9Qcm9kdWN0LzEzMTI4NzI5MjYxNTc=",
        "https://res.cloudinary.com/acme/image/upload/v1087988486/avatars/m53teqipsnbeynnued9h.jpg",
    ],
)
def test_shapes_refused_before_are_accepted(text: str) -> None:
    # Given a value of a shape the scanner used to refuse / Then nothing is reported
    assert scan_text(text) == []
