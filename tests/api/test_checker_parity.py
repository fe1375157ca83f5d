"""`escalate check` against the design document's reference checker, line for line (#15.6).

Scripts written against the reference count its errors, so every field of the packet is
turned into every wrong shape and both checkers' reports and exit codes are compared. The
reference runs its own main() in one batched process; ours runs `escalate check`'s entry
in this one, so hundreds of cases take a second or two.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from api.check_cli import run_check
from tests.support.reference_checker import reference_script, run_reference
from workflows.examples import valid_packet
from workflows.vocabulary import REQUIRED_STRINGS

MISSING = object()  # the field is left out of the packet

TEXT_FIELDS = REQUIRED_STRINGS  # the packet's text fields (SPEC §1)
ENUM_FIELDS = {
    "severity": ("low", "medium", "high", "critical"),
    "trigger_type": ("blocked", "tool_failure", "missing_input"),
    "waiting_behavior": ("paused", "read_only", "safe_subset", "stopped"),
}
LIST_FIELDS = ("attempted", "completed", "remaining")

# Every wrong shape a JSON value can take, plus text that is there but says nothing.
WRONG_VALUES: tuple[object, ...] = (
    MISSING,
    None,
    True,
    False,
    0,
    7,
    -1.5,
    "",
    " ",
    "\t\n",
    "\u00a0\u2003",  # no-break and em spaces: blank to str.strip()
    "x",
    "x" * 5000,  # too long for a person, not for the checks
    "naïve ünïcode ✓",
    [],
    ["x"],
    {},
    {"kind": "log"},
)
UNHASHABLE = (list, dict)  # the reference's set lookups raise on these (see below)
BAD_ENUM_WORDS = ("urgent", "HIGH", " high", "high ", "Paused", "none", "blocked,uncertain")
BAD_ENTRIES: tuple[object, ...] = (
    "",
    " ",
    "\n",
    None,
    0,
    1.0,
    True,
    [],
    ["nested"],
    {},
    {"a": "b"},
)
BAD_EVIDENCE: tuple[object, ...] = (
    "logs/run.log",
    None,
    3,
    True,
    [],
    ["log", "x"],
    {},
    {"kind": "log"},
    {"ref": "logs/run.log"},
    {"kind": "video", "ref": "clip.mp4"},
    {"kind": "video", "ref": ""},  # the issue's case: one error, not two
    {"kind": None, "ref": None},
    {"kind": "LOG", "ref": "x"},
    {"kind": "log ", "ref": "x"},
    {"kind": 1, "ref": "x"},
    {"kind": "log", "ref": ""},
    {"kind": "log", "ref": "  "},
    {"kind": "log", "ref": None},
    {"kind": "log", "ref": 5},
    {"kind": "log", "ref": ["x"]},
    {"kind": "log", "ref": {"path": "x"}},
    {"kind": "test", "ref": "t::x", "note": "extra keys are ignored"},
)
GOOD_EVIDENCE = {"kind": "log", "ref": "logs/run.log"}


def with_field(name: str, value: object, base: dict[str, Any] | None = None) -> dict[str, Any]:
    packet = dict(valid_packet() if base is None else base)
    if value is MISSING:
        packet.pop(name, None)
    else:
        packet[name] = value
    return packet


def cases() -> Iterator[tuple[str, object]]:
    """(label, packet as decoded JSON) for every mutation; labels name the case in failures."""
    yield "valid", valid_packet()
    for top in (None, True, 1, "packet", [], [valid_packet()]):
        yield f"top level {top!r}", top
    for name in (*TEXT_FIELDS, *ENUM_FIELDS, *LIST_FIELDS, "evidence"):
        for value in WRONG_VALUES:
            yield f"{name}={value!r:.40}", with_field(name, value)
    for name in ENUM_FIELDS:
        for word in BAD_ENUM_WORDS:
            yield f"{name}={word!r}", with_field(name, word)
    for name in LIST_FIELDS:
        for entry in BAD_ENTRIES:
            yield f"{name}=[{entry!r}]", with_field(name, [entry])
            yield f"{name}=[ok, {entry!r}, ok]", with_field(name, ["ok", entry, "fine"])
        yield f"{name}: every entry bad", with_field(name, list(BAD_ENTRIES))
    for entry in BAD_EVIDENCE:
        yield f"evidence=[{entry!r}]", with_field("evidence", [entry])
        yield f"evidence=[good, {entry!r}]", with_field("evidence", [GOOD_EVIDENCE, entry])
    yield "evidence: every entry bad", with_field("evidence", list(BAD_EVIDENCE))
    # The rules that join fields: critical's waiting behaviour, the evidence warning's count.
    for severity in ("low", "high", "critical", "urgent"):
        for waiting in (*ENUM_FIELDS["waiting_behavior"], "later", MISSING):
            for evidence in ([], [GOOD_EVIDENCE], [GOOD_EVIDENCE] * 2, [GOOD_EVIDENCE, {}]):
                packet = with_field("waiting_behavior", waiting)
                packet = with_field("evidence", evidence, with_field("severity", severity, packet))
                label = f"severity={severity} waiting={waiting!r:.10} evidence={len(evidence)}"
                yield label, packet
    for remaining in ([], [""], ["x"], "x"):
        yield f"remaining={remaining!r}", with_field("remaining", remaining)
    yield "every field missing", {}
    yield "every field null", dict.fromkeys(valid_packet())


def unhashable_enum(packet: object) -> bool:
    """The reference looks enum values up in sets: a list or object there raises TypeError."""
    if not isinstance(packet, dict):
        return False
    values = [packet.get(name) for name in ENUM_FIELDS]
    evidence = packet.get("evidence")
    if isinstance(evidence, list):
        values += [entry.get("kind") for entry in evidence if isinstance(entry, dict)]
    return any(isinstance(value, UNHASHABLE) for value in values)


def ours(path: Path) -> tuple[str, int]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_check(str(path))
    return out.getvalue(), code


def test_given_every_wrong_shape_of_every_field_then_the_reports_match_the_reference(
    tmp_path: Path,
) -> None:
    # Given: one file per mutated packet, and the reference cut out of the seed
    script = reference_script(tmp_path)
    labelled = list(cases())
    paths = []
    for index, (_, packet) in enumerate(labelled):
        paths.append(tmp_path / f"case-{index:04}.json")
        paths[-1].write_text(json.dumps(packet), encoding="utf-8")
    # When
    theirs = run_reference(script, paths)
    mine = [ours(path) for path in paths]
    # Then: the same lines and exit code, but where the reference itself crashes
    mismatched, crashed = [], []
    for (label, packet), reference, our in zip(labelled, theirs, mine, strict=True):
        if isinstance(reference[1], str):
            crashed.append(label)
            assert unhashable_enum(packet), f"{label}: the reference {reference[1]}"
            assert our[1] == 1 and "bad " in our[0], f"{label}: {our}"
        elif our != reference:
            mismatched.append(f"{label}:\n--- reference\n{reference[0]}--- ours\n{our[0]}")
    assert not mismatched, f"{len(mismatched)} of {len(labelled)} differ:\n" + "\n".join(
        mismatched[:5]
    )
    assert len(labelled) - len(crashed) > 450  # the table is not quietly emptied


def test_given_an_evidence_entry_with_a_bad_kind_and_a_blank_ref_then_one_error(
    tmp_path: Path,
) -> None:
    # Given: the issue's packet
    path = tmp_path / "packet.json"
    path.write_text(json.dumps(with_field("evidence", [{"kind": "video", "ref": ""}])))
    # When
    report, code = ours(path)
    # Then
    assert code == 1
    assert "errors: 1\n  error: evidence: bad kind 'video'\n" in report


def test_given_unreadable_files_then_both_say_cannot_read_with_exit_2(tmp_path: Path) -> None:
    # Given
    script = reference_script(tmp_path)
    broken, empty, absent = tmp_path / "broken.json", tmp_path / "empty.json", tmp_path / "no"
    broken.write_text('{"packet_id": ', encoding="utf-8")
    empty.write_text("", encoding="utf-8")
    paths = [broken, empty, absent]
    # When
    theirs = run_reference(script, paths)
    # Then
    assert [ours(path) for path in paths] == theirs
    assert all(code == 2 and out.startswith("error: cannot read packet: ") for out, code in theirs)
