"""Transcript text to HTML: Markdown through markdown-it, then nh3 (ammonia) so no raw HTML
from a transcript ever reaches the DOM. Pushed partials are display-only."""

from __future__ import annotations

import functools
import re

import nh3
from django.template.loader import render_to_string
from markdown_it import MarkdownIt

from providers.schema import Message

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-_]")

_ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td", "del",
}  # fmt: skip


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


# Built once: nh3.clean(...) with these options builds the same sanitizer on every call, which
# was most of its cost per message.
_cleaner = nh3.Cleaner(
    tags=_ALLOWED_TAGS,
    attributes={"a": {"href", "title"}, "code": {"class"}},
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer nofollow",
)


@functools.lru_cache(maxsize=4096)
def markdown_html(text: str) -> str:
    return _cleaner.clean(_md.render(strip_ansi(text)))


@functools.lru_cache(maxsize=8192)
def message_html(message: Message, epoch: str) -> str:
    # Messages are immutable: every socket of a run renders the same (epoch, message) once.
    return render_to_string("runs/detail.html#message", {"message": message, "epoch": epoch})
