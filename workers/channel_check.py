"""At start: every tag the design names must reach at least one usable channel.

apprise drops a URL whose plugin lacks its package (mqtt:// without paho-mqtt) with only a
log line, so a tag can silently lose its channel; this names the tag and the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from apprise.manager_plugins import NotificationManager

from workers.channels import ChannelBook


def _tags(value: Any) -> set[str]:
    if isinstance(value, str):
        return {part.strip() for part in value.replace(";", ",").split(",") if part.strip()}
    if isinstance(value, list):
        return {str(part).strip() for part in value}
    return set()


def _yaml_urls(document: Any) -> Iterator[tuple[str, set[str]]]:
    common = _tags(document.get("tag"))
    for entry in document.get("urls") or []:
        if isinstance(entry, str):
            yield entry, common
            continue
        if not isinstance(entry, dict):
            continue
        for url, options in entry.items():
            blocks = options if isinstance(options, list) else [options or {}]
            for block in blocks:
                yield (
                    str(url),
                    common | _tags(block.get("tag") if isinstance(block, dict) else None),
                )


def _text_urls(text: str) -> Iterator[tuple[str, set[str]]]:
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        tags, sep, url = line.partition("=")
        if sep and "://" not in tags:
            yield url.strip(), _tags(tags)
        else:
            yield line, set()


def configured_urls(config_path: Path) -> list[tuple[str, set[str]]]:
    """(URL, tags) for every entry of an apprise YAML or text config, usable or not."""
    text = config_path.read_text(encoding="utf-8")
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        document = None
    if isinstance(document, dict):
        return list(_yaml_urls(document))
    return list(_text_urls(text))


def _why_unusable(url: str) -> str | None:
    """What keeps apprise from using this URL here, e.g. 'mqtt:// needs paho-mqtt'."""
    plugins = NotificationManager()  # type: ignore[no-untyped-call]
    scheme = url.split("://", 1)[0].lower()
    if scheme not in plugins:
        return f"{scheme}:// is not a scheme apprise knows"
    plugin = plugins[scheme]
    if plugin.enabled:
        return None
    needed = (getattr(plugin, "requirements", None) or {}).get("packages_required")
    if needed:
        return f"{scheme}:// needs the Python package {needed}, which is not installed"
    return f"{scheme}:// cannot run on this system"


def unusable_tags(book: ChannelBook, config_path: Path, tags: Iterable[str]) -> list[str]:
    """One line per design tag that resolves to no usable channel, saying why."""
    entries = configured_urls(config_path)
    problems = []
    for tag in sorted(tags):
        # apprise loads a URL whose plugin lacks its package, then cannot send with it
        if any(getattr(c.service, "enabled", True) for c in book.channels(tag)):
            continue
        reasons = sorted(
            {
                reason
                for url, url_tags in entries
                if tag in url_tags and (reason := _why_unusable(url))
            }
        )
        why = "; ".join(reasons) if reasons else f"no URL in {config_path} has this tag"
        problems.append(f"tag '{tag}' has no usable channel: {why}")
    return problems
