"""The apprise adapter: one outcome per channel, retried with tenacity, URLs logged masked."""

from __future__ import annotations

import copy
import hashlib
import hmac
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import apprise
from apprise import NotifyFormat, NotifyType, plugins
from apprise.result import AppriseResultStatus
from tenacity import (
    RetryCallState,
    retry_if_result,
    stop_after_attempt,
    wait_exponential_jitter,
)
from tenacity import (
    Retrying as _Retrying,
)

from models.settings import Settings
from models.state_files import inbox_token, write_private
from workflows.errors import ConfigError
from workflows.stage_results import DeliveryState

log = logging.getLogger(__name__)

# apprise logs two INFO lines a send ("Notifying 1 service(s).", "Sent JSON notification.")
# that name no case: the send's event is its record. Its warnings and errors still show, and
# a level set by the operator's own logging config wins.
if logging.getLogger("apprise").level == logging.NOTSET:
    logging.getLogger("apprise").setLevel(logging.WARNING)

# A send ends in one of these delivery states.
SENT, FAILED, UNKNOWN = DeliveryState.SENT, DeliveryState.FAILED, DeliveryState.UNKNOWN
REFUSED = DeliveryState.REFUSED


@dataclass(frozen=True)
class Channel:
    """One configured apprise service behind a tag.

    `name` is its privacy-masked URL followed by a short digest of the configured URL: two
    hooks that mask alike (same host, secrets hidden) stay two channels, two outbox rows.
    """

    tag: str
    name: str
    service: Any

    @property
    def masked(self) -> str:
        return self.name.split(" #", 1)[0]

    @cached_property
    def url(self) -> str:
        """The service's URL, secrets included: what each send's plugin is built from."""
        return str(self.service.url())


def channel_name(service: Any, key: str = "") -> str:
    """The identity an outbox row keeps: masked URL + digest, never the secret itself. Keyed,
    so a weak password in a URL cannot be tried offline against a stolen database."""
    digest = hmac.new(key.encode(), str(service.url()).encode(), hashlib.sha256).hexdigest()[:10]
    return f"{service.url(privacy=True)} #{digest}"


@dataclass(frozen=True)
class SendOutcome:
    """What one send attempt did: sent, failed (definitely not delivered) or unknown."""

    state: DeliveryState
    error: str | None = None
    tries: int = 1
    # Where a native send landed (workers/native_pages.py); apprise sends keep none.
    refs: tuple[Mapping[str, Any], ...] = ()


class ChannelBook:
    """The operator's apprise config, resolved tag by tag into channels."""

    def __init__(self, config_path: Path | None, *, key: str = "") -> None:
        self._key = key
        self._apprise = apprise.Apprise()
        if config_path is not None:
            config = apprise.AppriseConfig()
            if not config.add(str(config_path)):
                raise ConfigError(f"{config_path}: apprise cannot read this config")
            self._apprise.add(config)
        # Measured: apprise's lazy config loading is not thread-safe (under a thread pool some
        # find() calls came back empty), so resolve each tag once, under a lock.
        self._lock = threading.Lock()
        self._by_tag: dict[str, list[Channel]] = {}

    def channels(self, tag: str) -> list[Channel]:
        """Every service the tag selects, in config order."""
        with self._lock:
            if tag not in self._by_tag:
                found: dict[str, Channel] = {}
                for service in self._apprise.find(tag=tag):  # type: ignore[no-untyped-call]
                    name = channel_name(service, self._key)
                    found.setdefault(name, Channel(tag, name, service))  # listed twice: once
                self._by_tag[tag] = list(found.values())
            return list(self._by_tag[tag])

    def services(self) -> list[Any]:
        """Every configured apprise service, whatever its tags (a reply to an unknown code
        is answered by the bot it came through)."""
        with self._lock:
            return list(self._apprise)

    def channel(self, tag: str, name: str) -> Channel | None:
        """The channel behind `tag` with this name, if the config still has it; a row written
        before names had digests matches its masked URL when only one channel has it."""
        channels = self.channels(tag)
        exact = next((c for c in channels if c.name == name), None)
        if exact is not None:
            return exact
        alike = [c for c in channels if c.masked == name]
        return alike[0] if len(alike) == 1 else None


def dev_inbox_path(settings: Settings) -> Path:
    """Where the embedded demo's local channel keeps what it received."""
    return settings.home / "inbox.jsonl"


def dev_apprise_config(settings: Settings, tags: set[str]) -> Path:
    """With no apprise config given, every tag posts to the API's local inbox (json://), with
    the inbox's token as the URL's password (apprise masks it in what it logs)."""
    path = settings.home / "apprise-dev.yaml"
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    token = quote(inbox_token(settings.home), safe="")
    lines = [
        "# Generated: every design tag delivers to the local inbox (escalate inbox).",
        "urls:",
        f"  - json://inbox:{token}@{host}:{settings.port}/v1/dev/inbox:",
        f"      tag: {', '.join(sorted(tags))}",
    ]
    write_private(path, "\n".join(lines) + "\n")
    return path


@dataclass(frozen=True)
class Page:
    """What one send carries: the title, the text, an HTML twin for mail, the notify type."""

    title: str
    body: str
    html: str = ""
    notify_type: str = "info"


_per_thread = threading.local()


def _notifier(plugin: Any) -> apprise.Apprise:
    """This thread's Apprise, holding only `plugin` (made once: each one sets up a locale)."""
    single: apprise.Apprise | None = getattr(_per_thread, "apprise", None)
    if single is None:
        single = _per_thread.apprise = apprise.Apprise()
    single.clear()
    single.add(plugin)
    return single


@lru_cache(maxsize=512)
def _parsed_url(url: str) -> dict[str, Any] | None:
    """A service URL's parse, once per URL (the parse was most of a send's CPU)."""
    return plugins.url_to_dict(url, secure_logging=True)  # type: ignore[no-untyped-call,no-any-return]


def _fresh_plugin(url: str) -> Any:
    """A new plugin for one send: threads sending at once share no plugin state, and a kept
    plugin's throttle (its time of last send) would space one channel's sends apart."""
    parsed = _parsed_url(url)
    if parsed is None:
        return None
    try:
        # Not suppressed by apprise, which would format the plugin's URL for a debug line
        # at every send (2 % of a worker's CPU, docs/PERFORMANCE.md)
        return apprise.Apprise.instantiate(copy.deepcopy(parsed), suppress_exceptions=False)
    except Exception as error:  # its text may quote the URL's secrets: only its kind is logged
        log.warning("apprise cannot load a %s:// URL (%s)", parsed["schema"], type(error).__name__)
        return None


def _send_once(
    channel: Channel, page: Page, timeout: float, url_params: Mapping[str, str]
) -> SendOutcome:
    url = channel.url
    if url_params:  # per-message settings apprise reads from the URL (e.g. ntfy actions)
        # %20, not "+": apprise unquotes URL values without reading "+" as a space
        url += ("&" if "?" in url else "?") + urlencode(url_params, quote_via=quote)
    plugin = _fresh_plugin(url)
    if plugin is None:
        return SendOutcome(FAILED, f"{channel.name}: apprise cannot load this URL")
    single = _notifier(plugin)
    # Mail gets the escaped HTML part and apprise derives the text part from it, line by line;
    # everything else is sent as plain text, so newlines survive and no markup is live.
    body, body_format = (page.html, NotifyFormat.HTML) if page.html else (page.body, None)
    result = single.notify(
        body=body,
        title=page.title,
        notify_type=NotifyType(page.notify_type),
        body_format=body_format,
        timeout=timeout,
    )
    if result.status == AppriseResultStatus.SUCCESS:
        return SendOutcome(SENT)
    # apprise stops waiting on a timeout but the send may still complete: not a failure.
    if result.status == AppriseResultStatus.TIMEOUT:
        return SendOutcome(UNKNOWN, f"no answer from {channel.name} within {timeout:g}s")
    reasons = [entry.message for entry in result.logs()] if hasattr(result, "logs") else []
    detail = "; ".join(str(r) for r in reasons[-2:]) or f"status {result.status.name}"
    return SendOutcome(FAILED, f"{channel.name}: {detail}"[:500])


def send(
    channel: Channel,
    *,
    title: str,
    body: str,
    html: str = "",
    notify_type: str = "info",
    tries: int,
    first_backoff: float,
    timeout: float,
    url_params: Mapping[str, str] | None = None,
) -> SendOutcome:
    """Send with exponential backoff and jitter on definite failures; never retry unknown."""
    page = Page(title, body, html, notify_type)
    return retried(
        lambda: _send_once(channel, page, timeout, url_params or {}),
        name=channel.name,
        tries=tries,
        first_backoff=first_backoff,
    )


def retried(
    attempt: Callable[[], SendOutcome], *, name: str, tries: int, first_backoff: float
) -> SendOutcome:
    """`attempt` again after a definite failure, with exponential backoff and jitter, at most
    `tries` times; an unknown outcome (it may have arrived) is never sent again here."""

    def log_retry(state: RetryCallState) -> None:
        outcome = state.outcome.result() if state.outcome else None
        log.warning(
            "send to %s failed (try %d): %s",
            name,
            state.attempt_number,
            getattr(outcome, "error", None),
        )

    retrying = _Retrying(
        stop=stop_after_attempt(tries),
        wait=wait_exponential_jitter(
            multiplier=first_backoff, max=first_backoff * 8, jitter=first_backoff / 2
        ),
        retry=retry_if_result(lambda outcome: outcome.state == FAILED),
        before_sleep=log_retry,
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        reraise=False,
    )
    tried = 0

    def counted() -> SendOutcome:
        nonlocal tried
        tried += 1
        return attempt()

    outcome: SendOutcome = retrying(counted)
    return replace(outcome, tries=tried)
