"""Markdown inline text of the configuration reference (:mod:`hardneg.pipeline.config_reference`): code spans,
YAML literals, anchors and links, and descriptions made safe for Markdown (their code spans kept, placeholder words
made code, ``<``, ``*`` and ``_`` escaped) in prose and in table cells."""

from __future__ import annotations

import re

import yaml


def code(value: str) -> str:
    """``value`` as a Markdown code span."""
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def literal(value) -> str:
    """``value`` as a YAML flow literal, as a config file writes it (``test``, ``[RR@10, R@100]``, ``null``)."""
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, sort_keys=False, width=1 << 30)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def link(text: str, anchor: str) -> str:
    return f"[{code(text)}](#{anchor})"


_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
# A word holding a placeholder, such as results/<run>/metrics.json (without a sentence's final full stop).
_PLACEHOLDER_WORD = re.compile(r"[^\s()\[\],;:`]*<\w(?:[\w ]*\w)?>(?:[^\s()\[\],;:`]*[^\s()\[\],;:`.])?")


def prose(text: str) -> str:
    """A description as Markdown: its code spans kept, and a word holding a placeholder (``results/<run>/``) made
    one; elsewhere ``<`` written as an entity (it starts no HTML tag), and ``*`` and a word-initial or word-final
    ``_`` escaped (they are not emphasis)."""
    text = " ".join(str(text).split())
    out, position = [], 0
    for match in _CODE_SPAN.finditer(text):
        out.append(plain(text[position : match.start()]))
        out.append(match.group(0))
        position = match.end()
    out.append(plain(text[position:]))
    return "".join(out)


def plain(text: str) -> str:
    """Text outside code spans: its placeholder words as code, the rest escaped."""
    out, position = [], 0
    for match in _PLACEHOLDER_WORD.finditer(text):
        out.append(escape(text[position : match.start()]))
        out.append(code(match.group(0)))
        position = match.end()
    out.append(escape(text[position:]))
    return "".join(out)


def escape(text: str) -> str:
    text = text.replace("<", "&lt;").replace("*", r"\*")
    return re.sub(r"(?<!\w)_|_(?!\w)", r"\\_", text)


def cell(text: str) -> str:
    """A description inside a table cell: :func:`prose`, with ``|`` escaped."""
    return prose(text).replace("|", r"\|")
