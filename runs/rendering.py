"""Transcript text to HTML: Markdown through markdown-it, then nh3 (ammonia) so no raw HTML
from a transcript ever reaches the DOM. Pushed partials are display-only."""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import nh3
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.template.loader import get_template
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from markdown_it import MarkdownIt

from providers.schema import Message
from seeding.attachments import FOLDER, SAVED_NAME

if TYPE_CHECKING:
    from runs.models import Run
    from runs.transcripts import Tail

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
    prose = prose_html(text)
    return prose if prose is not None else full_markdown_html(text)


def full_markdown_html(text: str) -> str:
    return _cleaner.clean(_md.render(strip_ansi(text)))


# Plain prose: text that no CommonMark rule (nor the table extension, nor the sanitizer) would
# change but by wrapping its paragraphs. None of the characters that begin inline syntax, an
# entity, raw HTML, a table or a fence; no control character (ANSI escapes, tabs, CR, NUL) and
# no non-ASCII space (markdown-it trims those, nh3 writes U+00A0 as &nbsp;); no lone surrogate.
_PROSE_CHARS = re.compile(
    r"[^\\`*_\[\]<>&#|~=+\x00-\x09\x0b-\x1f\x7f-\x9f"
    r"\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ud800-\udfff]*"
)
# A line that could begin a block (indented code, a list item, a thematic break, a setext
# underline) or end in a hard break: leading or trailing spaces, "-", or "1." / "1)".
_NOT_PROSE_LINE = re.compile(r"^(?:[ -]|\d{1,9}[.)])| $", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n{2,}")


def prose_html(text: str) -> str | None:
    """What full_markdown_html makes of plain prose (byte for byte: a property test checks it),
    about eight times faster; None when the text is not plain prose."""
    if _PROSE_CHARS.fullmatch(text) is None or _NOT_PROSE_LINE.search(text) is not None:
        return None
    return "".join(f"<p>{p}</p>\n" for p in _PARAGRAPH_BREAK.split(text.strip("\n")) if p)


# The most of one message's text (and of its tool input) a page is sent; the rest loads on
# request. Escaping can grow text up to 6x (&quot;), so a capped message stays far below a
# websocket frame's bound (live/frames.FRAME_MAX_BYTES) however its text is made.
MESSAGE_TEXT_MAX = 32_000


def capped(message: Message) -> tuple[Message, int]:
    """The message cut to MESSAGE_TEXT_MAX characters per field, and its full length (0 when
    nothing was cut)."""
    full = max(len(message.text), len(message.tool_input))
    if full <= MESSAGE_TEXT_MAX:
        return message, 0
    return (
        dataclasses.replace(
            message, text=message.text[:MESSAGE_TEXT_MAX], tool_input=message.tool_input[:MESSAGE_TEXT_MAX]
        ),
        full,
    )


@functools.lru_cache(maxsize=8192)
def message_html(message: Message, epoch: str) -> str:
    # Messages are immutable: every socket of a run renders the same (epoch, message) once.
    shown, full_length = capped(message)
    return _render(shown, epoch, full_length)


def whole_message_html(message: Message, epoch: str) -> str:
    """Uncapped, on request only, never cached: it may be megabytes."""
    return _render(message, epoch, 0)


def _render(message: Message, epoch: str, full_length: int) -> str:
    return SafeString(compiled_message_html(message, epoch, full_length))


def template_message_html(message: Message, epoch: str, full_length: int) -> str:
    """The message through its template partial (runs/detail.html#message): the reference that
    compiled_message_html is held byte-identical to (a property test), not used to serve."""
    return render(
        "runs/detail.html#message",
        {"message": message, "epoch": epoch, "full_length": full_length, "shown_length": MESSAGE_TEXT_MAX},
    )


# The message partial compiled by hand into string building. A Django template render costs
# about 20 us before any markup and a message is rendered once per append, so it was the
# largest fixed cost of an appended line. Escaping is Django's (& < > " ' as entities, the same
# as html.escape); every filter the partial uses is reproduced with Django's own semantics.
_NEWLINES = re.compile(r"\r\n|\r")


def _truncate(text: str, length: int) -> str:
    # Django's truncatechars normalizes to NFC and counts combining characters as zero width.
    if len(text) <= length and unicodedata.is_normalized("NFC", text):
        return text
    return Truncator(text).chars(length)


def _firstline(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def _side_link(side: str) -> str:
    return f'<a class="side-link" href="?agent={escape(quote(side))}">Open the agent\'s conversation</a>'


def attachment_name(path: str) -> str:
    """The name of a file lab saved for the run (its URL is attachments/<name> beside the run's
    page), or "" for any other path."""
    folder, _, name = path.rpartition("/")
    return name if folder.endswith("/" + FOLDER) and SAVED_NAME.fullmatch(name) else ""


def compiled_message_html(message: Message, epoch: str, full_length: int) -> str:
    kind = message.kind
    text = message.text
    e = escape(epoch)
    seq = message.seq
    error = " msg-error" if message.is_error else ""
    head = f'<li id="msg-{e}-{seq}" class="msg msg-{escape(str(kind))}{error}" data-seq="{seq}">\n  '
    if kind == "assistant_text":
        body = f'<div class="md">{markdown_html(text)}</div>\n  '
    elif kind == "user_text":
        lines = escape(_NEWLINES.sub("\n", strip_ansi(text))).replace("\n", "<br>")
        body = f'<div class="user-text">{lines}</div>\n  '
    elif kind == "tool_use":
        tool_input = strip_ansi(message.tool_input)
        summary = (
            f'<summary><span class="tool-name">{escape(message.tool_name)}</span> '
            f"<code>{escape(_truncate(tool_input, 160))}</code></summary>"
        )
        if message.detail:
            inner = f'<div class="md tool-detail">{markdown_html(message.detail)}</div>'
            body = f'<details class="tool" open>{summary}{inner}</details>\n  '
        else:
            body = f'<details class="tool">{summary}<pre>{escape(tool_input)}</pre></details>\n  '
    elif kind == "tool_result":
        plain = strip_ansi(text)
        said = "failed: " if message.is_error else "result: "
        side = f" {_side_link(message.side)}" if message.side else ""
        body = (
            f'<details class="tool-result"><summary>{said}'
            f"<code>{escape(_truncate(_firstline(plain), 140))}</code></summary>"
            f"<pre>{escape(plain)}</pre></details>{side}\n  "
        )
    elif kind == "thinking":
        redacted = "" if text else " (redacted)"
        inner = f'<div class="md">{markdown_html(text)}</div>' if text else ""
        body = f'<details class="thinking"><summary>Thinking{redacted}</summary>{inner}</details>\n  '
    elif message.detail:
        side = _side_link(message.side) if message.side else ""
        body = (
            f'<details class="lifecycle lifecycle-detail"><summary>{escape(_truncate(strip_ansi(text), 300))}'
            f'</summary><div class="md">{markdown_html(message.detail)}</div></details>{side}\n  '
        )
    elif name := attachment_name(message.attachment):
        # An image lab saved for the run, as the CLI recorded it: its thumbnail (runs_extras).
        n = escape(name)
        body = (
            f'<figure class="attachment"><a href="attachments/{n}" target="_blank" rel="noopener">'
            f'<img src="attachments/{n}" alt="{escape(text)}" loading="lazy"></a>'
            f'<figcaption class="lifecycle">{escape(strip_ansi(text))}</figcaption></figure>'
        )
    else:
        body = f'<div class="lifecycle">{escape(strip_ansi(text))}</div>'
    if full_length:
        more = f"messages/full/?epoch={e}&amp;seq={seq}"
        tail = (
            f'\n  <p class="truncated">Showing the first {MESSAGE_TEXT_MAX} of {full_length} characters. '
            f'<a href="{more}" hx-get="{more}" hx-target="closest li" hx-swap="outerHTML">'
            "Load the full text</a></p>"
            "\n</li>"
        )
    else:
        tail = "\n  \n</li>"
    return head + body + tail


# The pushed fragments' templates, each found once: render_to_string looks the name up through
# every engine and its loaders on each call, and a wake renders two or three of them per
# appended message.
_templates: dict[str, Any] = {}


def render(name: str, context: dict[str, Any]) -> str:
    """render_to_string(name, context) for a template this process has rendered before."""
    template = _templates.get(name)
    if template is None:
        template = _templates[name] = get_template(name)
    return template.render(context)


@receiver(setting_changed)
def _forget_templates(*, setting: str, **kwargs: object) -> None:
    if setting == "TEMPLATES":  # as Django resets its engines (django.test.signals)
        _templates.clear()


# The run page's transcript fragments, for a page and for the live frames (live/frames.py).


def cursor_html(epoch: str, seq: int) -> str:
    # runs/detail.html#cursor with oob, compiled (a test holds them byte-identical).
    return SafeString(
        f'<div id="cursor" hx-swap-oob="true" data-epoch="{escape(epoch)}" data-seq="{seq}"></div>'
    )


def append_html(items: list[str], epoch: str, seq: int) -> str:
    """Rendered messages appended to the page's transcript, and the cursor of the last:
    runs/detail.html#append, compiled (a test holds them byte-identical)."""
    return SafeString(
        f'<ol hx-swap-oob="beforeend:#transcript">{"".join(items)}</ol>{cursor_html(epoch, seq)}'
    )


def transcript_html(run: Run, epoch: str, messages: list[Message], has_earlier: bool) -> str:
    return render(
        "runs/detail.html#transcript",
        {
            "run": run,
            "epoch": epoch,
            "transcript_messages": messages,
            "has_earlier": has_earlier,
            "oob": True,
        },
    )


def rerender_html(run: Run, tail: Tail) -> str:
    """The whole transcript element and the cursor, as OOB fragments: for a page showing
    another numbering of the run's transcript."""
    return transcript_html(run, tail.epoch, tail.messages, tail.has_earlier) + cursor_html(
        tail.epoch, tail.next_seq - 1
    )
