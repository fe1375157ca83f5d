"""`escalate check` as a shell loop runs it: the real console script, its stdout and exit code."""

from __future__ import annotations

import json
import secrets
import string
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workflows.examples import incomplete_packet, valid_packet

REPO = Path(__file__).resolve().parents[2]
ESCALATE = Path(sys.executable).parent / "escalate"
EXIT_PASS, EXIT_FAIL, EXIT_UNREADABLE = 0, 1, 2

INCOMPLETE_REPORT = """\
packet_id: esc-2026-10-16-004
run_id: run-8841
severity: high
trigger_type: blocked
waiting_behavior: paused
attempted: 1
completed: 2
remaining: 2
evidence_entries: 0
errors: 2
  error: requested_action: missing or empty
  error: evidence: missing, not a list, or empty
warnings: 0
verdict: FAIL
"""

VALID_REPORT = """\
packet_id: esc-2026-10-16-005
run_id: run-8842
severity: medium
trigger_type: uncertain
waiting_behavior: read_only
attempted: 2
completed: 2
remaining: 2
evidence_entries: 2
errors: 0
warnings: 0
verdict: PASS
"""


@dataclass(frozen=True)
class Run:
    """What one `escalate` invocation left behind."""

    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


def escalate(*args: str, stdin: str | None = None, cwd: Path | None = None) -> Run:
    """Run the installed console script the way a shell loop does."""
    assert ESCALATE.exists(), f"console script not installed at {ESCALATE}"
    done = subprocess.run(
        [str(ESCALATE), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def write_packet(folder: Path, packet: Any, name: str = "packet.json") -> Path:
    """A packet file as an agent would leave it on disk."""
    path = folder / name
    path.write_text(json.dumps(packet), encoding="utf-8")
    return path


def fake_github_token() -> str:
    """A GitHub-token-shaped value made up now, so no real or fixed secret is in the repo."""
    alnum = string.ascii_letters + string.digits
    return "ghp_" + "".join(secrets.choice(alnum) for _ in range(36))


def fake_aws_key_id() -> str:
    """An AWS access-key-id-shaped value made up now."""
    upper = string.ascii_uppercase + string.digits
    return "AKIA" + "".join(secrets.choice(upper) for _ in range(16))


# --- the two worked examples -------------------------------------------------------------------


def test_given_the_incomplete_example_when_checked_then_the_spec_report_and_exit_1() -> None:
    # Given the built-in incomplete example / When
    run = escalate("check", "--make-fixture")
    # Then the report is SPEC §1's, line for line
    assert run.lines == INCOMPLETE_REPORT.splitlines(), run.stdout + run.stderr
    assert run.stdout == INCOMPLETE_REPORT
    assert run.code == EXIT_FAIL


def test_given_the_valid_example_when_checked_then_the_pass_report_and_exit_0() -> None:
    # Given the built-in valid example / When
    run = escalate("check", "--make-valid")
    # Then
    assert run.lines == VALID_REPORT.splitlines(), run.stdout + run.stderr
    assert run.stdout == VALID_REPORT
    assert run.code == EXIT_PASS


def test_given_the_incomplete_example_as_a_file_when_checked_then_same_as_make_fixture(
    tmp_path: Path,
) -> None:
    # Given the same packet written to disk
    path = write_packet(tmp_path, incomplete_packet())
    # When
    run = escalate("check", str(path))
    # Then the file path and the built-in flag agree
    assert run.stdout == INCOMPLETE_REPORT
    assert run.code == EXIT_FAIL


# --- malformed packets -------------------------------------------------------------------------


def many_faults_packet() -> dict[str, Any]:
    """A packet wrong in almost every way the spec lists, at most once per rule."""
    packet = valid_packet()
    del packet["packet_id"]  # missing
    packet["run_id"] = "   "  # blank
    packet["task_summary"] = 42  # not a string
    packet["blocked_on"] = ""  # empty
    packet["severity"] = "urgent"
    packet["trigger_type"] = None
    del packet["waiting_behavior"]
    packet["attempted"] = []
    packet["completed"] = "exported everything"
    packet["remaining"] = ["Verify totals.", "", 7]
    packet["evidence"] = [
        "logs/run.log",
        {"kind": "video", "ref": "clip.mp4"},
        {"kind": "log", "ref": "  "},
        {"kind": "artifact", "ref": "artifacts/orphans.csv"},
    ]
    return packet


MANY_FAULTS_REPORT = [
    "packet_id: -",
    "run_id: -",
    "severity: -",
    "trigger_type: -",
    "waiting_behavior: -",
    "attempted: 0",
    "completed: 0",
    "remaining: 1",
    "evidence_entries: 1",
    "errors: 14",
    "  error: packet_id: missing or empty",
    "  error: run_id: missing or empty",
    "  error: task_summary: missing or empty",
    "  error: blocked_on: missing or empty",
    "  error: severity: bad value 'urgent'",
    "  error: trigger_type: bad value None",
    "  error: waiting_behavior: bad value None",
    "  error: attempted: empty list",
    "  error: completed: missing or not a list",
    "  error: remaining: entry is empty or not a string",
    "  error: remaining: entry is empty or not a string",
    "  error: evidence: entry is not an object",
    "  error: evidence: bad kind 'video'",
    "  error: evidence: ref is empty",
    "warnings: 0",
    "verdict: FAIL",
]


def test_given_a_packet_with_many_faults_when_checked_then_every_error_in_spec_order(
    tmp_path: Path,
) -> None:
    # Given
    path = write_packet(tmp_path, many_faults_packet())
    # When
    run = escalate("check", str(path))
    # Then every fixed error line, in the order SPEC §1 lists the rules
    assert run.lines == MANY_FAULTS_REPORT, run.stdout + run.stderr
    assert run.code == EXIT_FAIL


def test_given_critical_while_read_only_when_checked_then_the_critical_rule_comes_last(
    tmp_path: Path,
) -> None:
    # Given a critical case that would keep working, with one evidence entry and a bad list
    packet = valid_packet()
    packet["severity"] = "critical"
    packet["waiting_behavior"] = "read_only"
    packet["evidence"] = [{"kind": "test", "ref": "tests/test_totals.py::test_sum"}]
    packet["remaining"] = None
    path = write_packet(tmp_path, packet)
    # When
    run = escalate("check", str(path))
    # Then the list error precedes the critical rule; the evidence advice is a warning
    assert run.lines[9:] == [
        "errors: 2",
        "  error: remaining: missing or not a list",
        "  error: severity critical: waiting_behavior must be paused or stopped",
        "warnings: 1",
        "  warning: severity critical: only 1 evidence entry, 2 advised",
        "verdict: FAIL",
    ], run.stdout
    assert run.code == EXIT_FAIL


def test_given_only_warnings_when_checked_then_pass_with_the_warning_lines_and_exit_0(
    tmp_path: Path,
) -> None:
    # Given a high case with one evidence entry and nothing left to do
    packet = valid_packet()
    packet["severity"] = "high"
    packet["waiting_behavior"] = "paused"
    packet["evidence"] = packet["evidence"][:1]
    packet["remaining"] = []
    path = write_packet(tmp_path, packet)
    # When
    run = escalate("check", str(path))
    # Then
    assert run.lines[2] == "severity: high"
    assert run.lines[7:] == [
        "remaining: 0",
        "evidence_entries: 1",
        "errors: 0",
        "warnings: 2",
        "  warning: remaining: empty list, no remaining work stated",
        "  warning: severity high: only 1 evidence entry, 2 advised",
        "verdict: PASS",
    ], run.stdout
    assert run.code == EXIT_PASS


@pytest.mark.parametrize("document", [[valid_packet()], "a string", 12, None])
def test_given_json_that_is_not_an_object_when_checked_then_one_error_and_exit_1(
    tmp_path: Path, document: Any
) -> None:
    # Given a well-formed JSON document that is not an object
    path = write_packet(tmp_path, document)
    # When
    run = escalate("check", str(path))
    # Then
    assert run.lines[9:] == [
        "errors: 1",
        "  error: packet is not a JSON object",
        "warnings: 0",
        "verdict: FAIL",
    ], run.stdout
    assert run.lines[0] == "packet_id: -"
    assert run.code == EXIT_FAIL


# --- unreadable input --------------------------------------------------------------------------


def assert_unreadable(run: Run) -> None:
    """Exactly one line, `error: cannot read packet: ...`, and exit 2 (no traceback, no report)."""
    lines = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, run.stdout + run.stderr
    assert lines[0].startswith("error: cannot read packet:"), lines
    assert run.code == EXIT_UNREADABLE


@pytest.mark.parametrize(
    "content",
    [None, b"{", b'{"packet_id": "x",}', b"", b'{"a": 1}{"b": 2}', b"\xff\xfe{}"],
    ids=["missing", "truncated", "trailing-comma", "empty", "two-documents", "not-utf8"],
)
def test_given_a_file_that_cannot_be_read_or_parsed_when_checked_then_exit_2(
    tmp_path: Path, content: bytes | None
) -> None:
    # Given
    path = tmp_path / "packet.json"
    if content is not None:
        path.write_bytes(content)
    # When
    run = escalate("check", str(path))
    # Then
    assert_unreadable(run)


def test_given_a_directory_when_checked_then_exit_2(tmp_path: Path) -> None:
    # Given / When
    run = escalate("check", str(tmp_path))
    # Then
    assert_unreadable(run)


def test_given_deeply_nested_json_when_checked_then_exit_2_not_a_traceback(
    tmp_path: Path,
) -> None:
    # Given a file the JSON decoder cannot parse because it nests too deep
    path = tmp_path / "packet.json"
    path.write_text("[" * 200_000, encoding="utf-8")
    # When
    run = escalate("check", str(path))
    # Then it is reported as unparsable, like any other broken file
    assert_unreadable(run)


def test_given_neither_a_file_nor_a_flag_when_checked_then_exit_2() -> None:
    # Given / When
    run = escalate("check")
    # Then
    assert run.code == EXIT_UNREADABLE
    assert "give exactly one of" in run.stderr


# --- standard input ----------------------------------------------------------------------------


def test_given_dash_when_the_valid_packet_is_piped_then_it_is_read_from_stdin() -> None:
    # Given / When
    run = escalate("check", "-", stdin=json.dumps(valid_packet()))
    # Then
    assert run.stdout == VALID_REPORT
    assert run.code == EXIT_PASS


def test_given_dash_when_the_incomplete_packet_is_piped_then_fail_and_exit_1() -> None:
    # Given / When
    run = escalate("check", "-", stdin=json.dumps(incomplete_packet()))
    # Then
    assert run.stdout == INCOMPLETE_REPORT
    assert run.code == EXIT_FAIL


@pytest.mark.parametrize(
    ("stdin", "code"),
    [("[1, 2]", EXIT_FAIL), ("{not json", EXIT_UNREADABLE), ("", EXIT_UNREADABLE)],
)
def test_given_dash_when_bad_input_is_piped_then_the_same_exit_codes_as_files(
    stdin: str, code: int
) -> None:
    # Given / When
    run = escalate("check", "-", stdin=stdin)
    # Then
    assert run.code == code, run.stdout + run.stderr
    if code == EXIT_FAIL:
        assert "  error: packet is not a JSON object" in run.lines
    else:
        assert_unreadable(run)


# --- --json ------------------------------------------------------------------------------------


def json_result(run: Run) -> dict[str, Any]:
    """The decoded --json output, which must be a single JSON object."""
    data = json.loads(run.stdout)
    assert isinstance(data, dict), run.stdout
    return data


def test_given_json_when_the_incomplete_example_is_checked_then_the_same_result_as_json() -> None:
    # Given / When
    run = escalate("check", "--make-fixture", "--json")
    # Then
    assert run.code == EXIT_FAIL
    assert json_result(run) == {
        "packet_id": "esc-2026-10-16-004",
        "run_id": "run-8841",
        "severity": "high",
        "trigger_type": "blocked",
        "waiting_behavior": "paused",
        "attempted": 1,
        "completed": 2,
        "remaining": 2,
        "evidence_entries": 0,
        "errors": [
            "requested_action: missing or empty",
            "evidence: missing, not a list, or empty",
        ],
        "warnings": [],
        "verdict": "FAIL",
    }


def test_given_json_when_the_valid_example_is_checked_then_pass_and_exit_0() -> None:
    # Given / When
    run = escalate("check", "--make-valid", "--json")
    # Then
    assert run.code == EXIT_PASS
    data = json_result(run)
    assert (data["verdict"], data["errors"], data["warnings"]) == ("PASS", [], [])
    assert (data["attempted"], data["completed"], data["remaining"]) == (2, 2, 2)
    assert data["evidence_entries"] == 2
    assert data["packet_id"] == "esc-2026-10-16-005"


def test_given_json_when_a_faulty_packet_is_checked_then_the_errors_match_the_report(
    tmp_path: Path,
) -> None:
    # Given
    path = write_packet(tmp_path, many_faults_packet())
    # When
    as_json = escalate("check", str(path), "--json")
    as_text = escalate("check", str(path))
    # Then the JSON says what the report says
    assert as_json.code == as_text.code == EXIT_FAIL
    data = json_result(as_json)
    assert ["  error: " + line for line in data["errors"]] == [
        line for line in as_text.lines if line.startswith("  error: ")
    ]
    assert data["packet_id"] is None
    assert data["verdict"] == "FAIL"
    assert (data["remaining"], data["evidence_entries"]) == (1, 1)


def test_given_json_when_only_warnings_then_they_are_listed_and_exit_0(tmp_path: Path) -> None:
    # Given
    packet = valid_packet()
    packet["remaining"] = []
    path = write_packet(tmp_path, packet)
    # When
    run = escalate("check", str(path), "--json")
    # Then
    assert run.code == EXIT_PASS
    assert json_result(run)["warnings"] == ["remaining: empty list, no remaining work stated"]


def test_given_json_when_the_file_is_unreadable_then_exit_2(tmp_path: Path) -> None:
    # Given / When
    run = escalate("check", str(tmp_path / "absent.json"), "--json")
    # Then
    assert run.code == EXIT_UNREADABLE
    assert "error: cannot read packet:" in run.stdout + run.stderr


# --- secrets -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make_secret", "kind"),
    [(fake_github_token, "GitHub token"), (fake_aws_key_id, "AWS access key")],
    ids=["github", "aws"],
)
@pytest.mark.parametrize("as_json", [False, True], ids=["report", "json"])
def test_given_a_secret_in_trigger_detail_when_checked_then_named_never_shown(
    tmp_path: Path, make_secret: Any, kind: str, as_json: bool
) -> None:
    # Given a packet whose facts include a credential
    secret: str = make_secret()
    packet = valid_packet()
    packet["trigger_detail"] = f"The deploy step failed while using {secret} against the API."
    path = write_packet(tmp_path, packet)
    # When
    run = escalate("check", str(path), *(["--json"] if as_json else []))
    # Then the error names the field and the kind, and the value is nowhere
    line = f"trigger_detail: contains a secret ({kind})"
    if as_json:
        assert json_result(run)["errors"] == [line]
    else:
        assert f"  error: {line}" in run.lines, run.stdout
        assert "errors: 1" in run.lines
        assert run.lines[-1] == "verdict: FAIL"
    assert run.code == EXIT_FAIL
    assert secret not in run.stdout
    assert secret not in run.stderr


def test_given_a_secret_and_other_errors_when_checked_then_the_secret_line_comes_last(
    tmp_path: Path,
) -> None:
    # Given a packet with a missing field and a token in its detail
    secret = fake_github_token()
    packet = valid_packet()
    packet["trigger_detail"] = f"token {secret} was rejected"
    packet["recipient"] = ""
    path = write_packet(tmp_path, packet)
    # When
    run = escalate("check", str(path))
    # Then the secret error is "an addition of ours, after the others"
    errors = [line for line in run.lines if line.startswith("  error: ")]
    assert errors[0] == "  error: recipient: missing or empty"
    assert errors[-1].startswith("  error: trigger_detail: contains a secret (")
    assert secret not in run.stdout + run.stderr
    assert run.code == EXIT_FAIL


# --- import weight -----------------------------------------------------------------------------

HEAVY = ("celery", "sqlalchemy", "sqlmodel", "apprise", "fastapi", "kombu")

IMPORT_PROBE = f"""
import sys
import typer
import api.cli
try:
    code = api.cli.app(["check", "--make-valid"], standalone_mode=False)
except (SystemExit, typer.Exit) as stop:
    code = getattr(stop, "exit_code", getattr(stop, "code", None))
print("exit", code, file=sys.stderr)
print("loaded:" + ",".join(name for name in {HEAVY!r} if name in sys.modules))
"""


def test_given_a_fresh_interpreter_when_check_runs_then_no_service_stack_is_imported() -> None:
    # Given a fresh interpreter / When api.cli is imported and `check` runs
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    # Then the check really ran, and none of the service's heavy dependencies were loaded
    assert done.returncode == 0, done.stderr
    assert "verdict: PASS" in done.stdout
    assert "exit 0" in done.stderr
    assert done.stdout.splitlines()[-1] == "loaded:", done.stdout


CONSOLE_PROBE = f"""
import sys
sys.argv = ["escalate", "check", "--make-valid"]
from api.entry import main
try:
    main()
except SystemExit as stop:
    print("exit", stop.code, file=sys.stderr)
print("loaded:" + ",".join(n for n in {(*HEAVY, "typer", "pydantic")!r} if n in sys.modules))
"""


def test_given_the_console_script_when_check_runs_then_not_even_typer_is_imported() -> None:
    # Given the entry point the `escalate` script calls / When it runs `check`
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE_PROBE],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    # Then it took the fast path: no CLI framework, no validation library, no service stack
    assert "exit 0" in done.stderr, done.stderr
    assert "verdict: PASS" in done.stdout
    assert done.stdout.splitlines()[-1] == "loaded:", done.stdout
