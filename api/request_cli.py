"""`escalate request compose|parse`: request files (SPEC §7) on disk, filed with the service."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from api.client import Escalations
    from workflows.design import Design
    from workflows.request_schema import Request

EXIT_DONE, EXIT_NOT_DONE, EXIT_BAD_INPUT, EXIT_NOT_FILED = 0, 1, 2, 3

request_app = typer.Typer(
    name="request",
    help="Request files (SPEC §7): compose one when a human is needed, parse the reply.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Mount `request compose` and `request parse` on the `escalate` app."""
    app.add_typer(request_app, name="request")


def _fail(lines: list[str], source: str = "") -> typer.Exit:
    for line in lines:
        typer.echo(f"error: {source}{line}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


def _design(path: Path | None) -> Design:
    from models.design_file import load_design
    from models.settings import Settings
    from workflows.errors import DesignError

    try:
        return load_design(path or Settings().design_path)
    except DesignError as exc:
        raise _fail([str(exc)]) from None


@request_app.command(
    "compose",
    epilog="Exit 0: request written (and filed); 1: no human needed, nothing written; "
    "2: bad input; 3: written but filing failed (escalation_id null).",
)
def compose_command(
    situation: Annotated[str, typer.Option(help="What the run faces, in a sentence or two.")],
    policy: Annotated[str, typer.Option(help="The policy the run applies, as text.")],
    trigger: Annotated[str | None, typer.Option(help="Trigger type that fired.")] = None,
    counter: Annotated[
        list[str] | None, typer.Option(help="A fact the design checks: NAME=NUMBER (repeat).")
    ] = None,
    missing: Annotated[list[str] | None, typer.Option(help="A missing input (repeat).")] = None,
    case: Annotated[str | None, typer.Option(help="Case tag, e.g. formatting.")] = None,
    recoverable: Annotated[
        bool, typer.Option("--recoverable", help="The error is recoverable by retrying.")
    ] = False,
    repo_answers: Annotated[
        bool, typer.Option("--repo-answers", help="The repo or brief already answers it.")
    ] = False,
    option: Annotated[
        list[str] | None,
        typer.Option(
            help="An answer: 'Label=value', verb-led label (repeat; default Approve, Deny)."
        ),
    ] = None,
    prompt: Annotated[
        str | None,
        typer.Option(
            help="The question, at most 120 characters (default: the situation's first "
            "sentence asked as the choice, e.g. '<sentence>: Solve captcha or Skip job?')."
        ),
    ] = None,
    timeout_minutes: Annotated[
        int | None, typer.Option(help="Minutes before the timeout default (default: the tier's).")
    ] = None,
    timeout_action: Annotated[
        str | None, typer.Option(help="skip|queue|retry|abort|hold (default: the tier's).")
    ] = None,
    context_ref: Annotated[
        list[str] | None, typer.Option(help="A file, link or log the human may need (repeat).")
    ] = None,
    directory: Annotated[Path, typer.Option("--dir", help="Folder of request files.")] = Path(
        "requests"
    ),
    run: Annotated[str, typer.Option(help="Run id the escalation is filed under.")] = "requests",
    no_file_escalation: Annotated[
        bool, typer.Option("--no-file-escalation", help="Write the file only (offline).")
    ] = False,
    design: Annotated[
        Path | None, typer.Option(help="Design record (default: ESCALATE_DESIGN).")
    ] = None,
    request_id: Annotated[
        str | None,
        typer.Option(help="The caller's own 12-hex request id (default: a generated one)."),
    ] = None,
    configured: Annotated[
        list[str] | None,
        typer.Option(
            help="Something the policy's 'if X is configured' asks about, e.g. 'MFA backup' "
            "(repeat)."
        ),
    ] = None,
) -> None:
    """Decide needs-human from the design; when true, write requests/<request_id>.json and
    file it."""
    import secrets
    from datetime import UTC, datetime

    from workflows.errors import RequestInvalid
    from workflows.request_schema import REQUEST_ID
    from workflows.requests import compose, situation_from_inputs

    the_design = _design(design)
    if request_id is not None:
        if not REQUEST_ID.fullmatch(request_id):  # also keeps the path inside --dir
            raise _fail([f"--request-id: {request_id!r} is not 12 lowercase hex characters"])
        if (directory / f"{request_id}.json").exists():
            raise _fail([f"--request-id: {directory / request_id}.json exists already"])
    else:
        request_id = secrets.token_hex(6)
        while (directory / f"{request_id}.json").exists():
            request_id = secrets.token_hex(6)
    try:
        facts = situation_from_inputs(
            situation,
            trigger=trigger,
            counters=counter or (),
            missing=missing or (),
            case=case,
            recoverable=recoverable,
            repo_answers=repo_answers,
        )
        composed = compose(
            the_design,
            facts,
            policy=policy,
            request_id=request_id,
            now=datetime.now(UTC),
            prompt=prompt,
            options=option or (),
            timeout_minutes=timeout_minutes,
            timeout_action=timeout_action,
            context_refs=context_ref or (),
            configured=configured or (),
        )
    except RequestInvalid as exc:
        raise _fail(exc.problems) from None
    answer: dict[str, Any] = composed.answer()
    if composed.request is None:
        typer.echo(json.dumps(answer, indent=2, ensure_ascii=False))
        raise typer.Exit(EXIT_NOT_DONE)
    path = directory / f"{request_id}.json"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _write(path, composed.request.to_dict())
    except OSError as exc:
        raise _fail([f"cannot write {path}: {exc.strerror or exc}"]) from None
    escalation_id = None
    if not no_file_escalation:
        escalation_id = _file(composed.request, the_design, run=run, path=path)
    answer.update(request_id=request_id, path=str(path), escalation_id=escalation_id)
    typer.echo(json.dumps(answer, indent=2, ensure_ascii=False))
    if not no_file_escalation and escalation_id is None:
        raise typer.Exit(EXIT_NOT_FILED)


@request_app.command(
    "parse",
    epilog="Exit 0: decided, the file is marked resolved; 1: recorded without deciding "
    "(the request stays open, or was already resolved); 2: bad input.",
)
def parse_command(
    request_id: Annotated[str, typer.Option(help="The request's 12-hex id.")],
    reply: Annotated[str, typer.Option(help="The reply text.")],
    directory: Annotated[Path, typer.Option("--dir", help="Folder of request files.")] = Path(
        "requests"
    ),
    design: Annotated[
        Path | None,
        typer.Option(help="Design record naming destructive options (default: ESCALATE_DESIGN)."),
    ] = None,
) -> None:
    """Read a reply against a request file and print the structured decision."""
    from datetime import UTC, datetime

    from workflows.errors import RequestInvalid
    from workflows.request_parsing import parse_request
    from workflows.request_schema import REQUEST_ID
    from workflows.requests import resolve

    if not REQUEST_ID.fullmatch(request_id):  # also keeps the path inside --dir
        raise _fail([f"--request-id: {request_id!r} is not 12 lowercase hex characters"])
    destructive = _design(design).destructive_options
    path = directory / f"{request_id}.json"
    try:
        with _locked(path):
            try:
                request = parse_request(json.loads(path.read_text(encoding="utf-8")))
                resolution = resolve(request, reply, now=datetime.now(UTC), destructive=destructive)
            except RequestInvalid as exc:
                raise _fail(exc.problems, f"{path}: ") from None
            except ValueError as exc:  # not JSON, or not UTF-8
                raise _fail([f"not a JSON request file: {exc}"], f"{path}: ") from None
            _write(path, resolution.request.to_dict())
    except FileNotFoundError:
        raise _fail([f"no request {request_id} in {directory}"]) from None
    except OSError as exc:
        raise _fail([f"cannot read or write {path}: {exc.strerror or exc}"]) from None
    answer = resolution.to_dict()
    escalation_id = resolution.request.escalation_id
    if resolution.decided and escalation_id:
        answer["escalation"] = _decide_case(escalation_id, resolution.request, reply)
    typer.echo(json.dumps(answer, indent=2, ensure_ascii=False))
    if not resolution.decided:
        typer.echo(resolution.note, err=True)
    raise typer.Exit(EXIT_DONE if resolution.decided else EXIT_NOT_DONE)


def _decide_case(escalation_id: str, request: Request, reply: str) -> dict[str, Any]:
    """The file's decision made on its escalation too, so the run and the service agree;
    what the service said, or why it could not be told (the file stays resolved)."""
    from api.cli_common import make_client
    from api.client import ClientError

    option = str((request.decision or {}).get("option"))
    try:
        with make_client(("operator", "admin")) as client:
            answered = client.reply(escalation_id, option=option, sender="request parse")
    except (ClientError, typer.Exit) as exc:  # Exit: no service or token found (said why)
        typer.echo(f"warning: escalation {escalation_id} not told: {exc}", err=True)
        return {"id": escalation_id, "outcome": None, "error": str(exc) or "no service found"}
    return {"id": escalation_id, "outcome": answered.get("outcome")}


def _file(request: Request, design: Design, *, run: str, path: Path) -> str | None:
    """File the request as an escalation and record its id in the file; None when that failed."""
    from dataclasses import replace

    from api.client import ClientError
    from workflows.errors import RequestInvalid
    from workflows.request_parsing import parse_request
    from workflows.requests import packet_for

    packet = packet_for(request, design, run_id=run, request_path=str(path))
    options = [{"label": o.label, "value": o.value} for o in request.options]
    # The case settles the file when it closes anywhere (dashboard, channel, timeout).
    wake = {"request_file": str(path.resolve())}
    try:
        client = escalations_client()
        try:
            result = client.raise_(packet, options=options, wake=wake)
        finally:
            client.close()
        escalation_id = str(result["id"])
        with _locked(path):
            current = parse_request(json.loads(path.read_text(encoding="utf-8")))
            _write(path, replace(current, escalation_id=escalation_id).to_dict())
    except ClientError as exc:
        detail = exc.detail
        lines = detail.get("errors") if isinstance(detail, dict) else None
        why = "; ".join(str(line) for line in lines) if lines else str(exc)
        typer.echo(f"error: {path} written but not filed: {why}", err=True)
        return None
    except (OSError, ValueError, KeyError, RequestInvalid) as exc:
        typer.echo(f"error: {path} written but not filed: {exc}", err=True)
        return None
    for warning in result.get("warnings", []):
        typer.echo(f"warning: {warning}", err=True)
    return escalation_id


def escalations_client() -> Escalations:
    """The service as every command finds it (api/cli_common.py), with the agent's token
    locally: filing needs the agent role (admin may do anything); operators may not."""
    from api.cli_common import make_client

    return make_client(("agent", "admin"))


def _write(path: Path, data: dict[str, Any]) -> None:
    """Replace the file whole, so a crash leaves the old or the new request, never half."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the request file, so two replies cannot both decide."""
    while True:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # _write swaps the inode: a lock on the old one guards nothing, so take it again.
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                yield
                return
        finally:
            os.close(fd)
