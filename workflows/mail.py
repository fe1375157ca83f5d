"""A message as blocks, so its text part and its escaped HTML part say the same lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jinja2 import Environment

# Autoescaped: packet text is data, never markup (an agent's <a href> stays text).
_HTML = Environment(autoescape=True).from_string(
    "<!DOCTYPE html>\n"
    '<html><head><meta charset="utf-8"><title>{{ title }}</title></head>\n'
    '<body style="font-family: sans-serif">\n'
    "{% for block in blocks %}"
    "{% if block.heading %}<p><strong>{{ block.heading }}</strong></p>{% endif %}"
    "{% if block.items %}<ul>{% for item in block.items %}<li>{{ item.text }}"
    '{% if item.link %}<br><a href="{{ item.link }}">{{ item.link }}</a>{% endif %}</li>'
    "{% endfor %}</ul>{% endif %}"
    "{% if block.lines %}<p>{{ block.lines | join('<br>'|safe) }}</p>{% endif %}"
    "{% endfor %}\n</body></html>\n"
)


@dataclass(frozen=True)
class Item:
    """One list entry; `link` is shown on its own line below it."""

    text: str
    link: str = ""


@dataclass(frozen=True)
class Block:
    """A paragraph of lines, or a headed list."""

    lines: tuple[str, ...] = ()
    heading: str = ""
    items: tuple[Item, ...] = ()


def as_text(blocks: Sequence[Block]) -> str:
    """The text/plain form: blocks apart by a blank line, list entries as '- ' lines."""
    parts = []
    for block in blocks:
        lines = [block.heading] if block.heading else []
        for item in block.items:
            lines.append(f"- {item.text}")
            if item.link:
                lines.append(f"  {item.link}")
        lines += block.lines
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def as_html(title: str, blocks: Sequence[Block]) -> str:
    """The text/html form from the template; every value escaped."""
    return _HTML.render(title=title, blocks=[block for block in blocks if block])
