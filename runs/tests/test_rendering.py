"""The plain-prose fast path of the Markdown filter writes exactly what the full renderer
(markdown-it, then nh3) writes, for any text it takes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.template import TemplateDoesNotExist
from django.template.loader import render_to_string
from hypothesis import given, settings
from hypothesis import strategies as st

from runs.rendering import full_markdown_html, markdown_html, prose_html, render

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
