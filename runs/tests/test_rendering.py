"""The plain-prose fast path of the Markdown filter writes exactly what the full renderer
(markdown-it, then nh3) writes, for any text it takes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.template import TemplateDoesNotExist
from django.template.loader import render_to_string
from django.utils.safestring import SafeString
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.schema import Message, MessageKind
from runs.rendering import (
    append_html,
    compiled_message_html,
    cursor_html,
    full_markdown_html,
    markdown_html,
    prose_html,
    render,
    template_message_html,
)

# Pieces of Markdown and of what the fast path refuses, beside plain words: the fast path must
# either refuse a text or render it as markdown-it + nh3 would.
_PIECES = st.sampled_from([
    "a", "Word", "é", "—", "“", "’", "0", "9", " ", "  ", "\n", "\n\n", "\n \n", ".", ",", ":", "!", "?",
    "(", ")", "'", '"', "-", "- ", "1. ", "2)", "10.", "#", "*", "_", "`", "```", "~", "=", "+", "|",
    "[", "]", "<", ">", "&", "&amp;", "\\", "\t", "\r", "\r\n", "\x00", "\x1b[31m", "\x0c", "\x85",
    "\u00a0", "\u2028", "\u3000", "\u200b", "\ufeff", "---", "===", "    code", "http://x.y", "www.x.y",
])  # fmt: skip
_TEXTS = st.one_of(st.lists(st.one_of(_PIECES, st.characters()), max_size=40).map("".join), st.text())


@settings(max_examples=3000, deadline=None)
@given(_TEXTS)
def test_the_prose_fast_path_renders_byte_for_byte_as_the_full_renderer(text: str) -> None:
    fast = prose_html(text)
    if fast is not None:
        assert fast == full_markdown_html(text)
    assert _outcome(markdown_html, text) == _outcome(full_markdown_html, text)


def _outcome(render: Callable[[str], str], text: str) -> str | type[Exception]:
    """The HTML, or the error (a lone surrogate cannot be encoded for the sanitizer)."""
    try:
        return render(text)
    except Exception as exc:  # compared, not swallowed
        return type(exc)


@pytest.mark.parametrize(
    "text",
    [
        "Done: the watcher reads only the appended bytes.",
        "First paragraph, with (parentheses) and 'quotes'.\n\nSecond one: 3 files changed!",
        "Line one\nline two — with “typography” and é.",
        "",
    ],
)
def test_plain_prose_takes_the_fast_path(text: str) -> None:
    assert prose_html(text) is not None


@pytest.mark.parametrize(
    "text",
    ["Use `code` here", "- a list", "1. first", "**bold**", "a  \nb", "    indented", "a & b", "x\u00a0y"],
)
def test_markdown_syntax_takes_the_full_renderer(text: str) -> None:
    assert prose_html(text) is None


def test_a_fragment_is_rendered_as_render_to_string_renders_it(settings) -> None:
    context = {"epoch": "e", "seq": 3, "oob": True}
    assert render("runs/detail.html#cursor", context) == render_to_string("runs/detail.html#cursor", context)
    # Found once, but found again when the settings change (as Django's engines are).
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": []}]
    with pytest.raises(TemplateDoesNotExist):
        render("runs/detail.html#cursor", context)


# Messages of every kind, with every flag, and texts that exercise each filter of the partial:
# escaping, ANSI stripping, line breaks (\r\n, \r), truncation (long, combining characters, text
# that NFC changes), the first line, Markdown, and side ids that need quoting.
_FIELD = st.one_of(
    _TEXTS,
    st.just(""),
    st.lists(
        st.sampled_from(["a", "e\u0301", "\u0301", "Å", "<b>", "&", '"', "'", "\r", "x" * 150]), max_size=60
    ).map("".join),
)
_MESSAGES = st.builds(
    Message,
    seq=st.integers(min_value=0, max_value=10**7),
    kind=st.sampled_from(list(MessageKind)),
    text=_FIELD,
    tool_name=_FIELD,
    tool_input=_FIELD,
    is_error=st.booleans(),
    detail=st.one_of(st.just(""), _FIELD),
    side=st.one_of(st.just(""), _FIELD),
)


@settings(max_examples=2000, deadline=None)
@given(_MESSAGES, st.sampled_from(["e1", "a<b&\"'", ""]), st.sampled_from([0, 40_000]))
def test_the_compiled_message_renders_byte_for_byte_as_its_template(
    message: Message, epoch: str, full_length: int
) -> None:
    expected = _outcome(lambda _: template_message_html(message, epoch, full_length), "")
    assert _outcome(lambda _: compiled_message_html(message, epoch, full_length), "") == expected


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["e1", "a<b&\"'", ""]) | st.text(max_size=8), st.integers(min_value=-1, max_value=10**9)
)
def test_the_compiled_cursor_and_append_render_byte_for_byte_as_their_templates(epoch: str, seq: int) -> None:
    cursor = {"epoch": epoch, "seq": seq, "oob": True}
    assert cursor_html(epoch, seq) == render_to_string("runs/detail.html#cursor", cursor)
    items = [SafeString('<li id="msg-e-1">one &amp; <b>two</b></li>'), SafeString("<li>3</li>")]
    for shown in (items, items[:1], []):
        context = {"items": shown, "epoch": epoch, "seq": seq}
        assert append_html(shown, epoch, seq) == render_to_string("runs/detail.html#append", context)
