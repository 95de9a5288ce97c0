"""Diff lines highlighted server-side by Pygments: the page gets escaped HTML with token
classes (static/lab/pygments.css), no script. No Django."""

from __future__ import annotations

import html

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from seeding.changes import FileChange

# A longer line (minified code) is cut when shown: highlighting it would cost more than it shows.
LINE_MAX_CHARS = 2000
_formatter = HtmlFormatter(nowrap=True)
_CODE = frozenset({"add", "del", "ctx"})


def lexer_for(path: str) -> Lexer:
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False, stripall=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def _cut(text: str) -> str:
    return text if len(text) <= LINE_MAX_CHARS else text[:LINE_MAX_CHARS] + "…"


def rows(change: FileChange) -> list[tuple[str, str]]:
    """(kind, HTML) per diff line. The code lines are highlighted together, in order, so the
    lexer sees them as one text; hunk headers and notes are escaped as they are."""
    code = [_cut(line.text) for line in change.lines if line.kind in _CODE]
    out_code: list[str] = []
    if code:
        rendered = highlight("\n".join(code) + "\n", lexer_for(change.path), _formatter)
        out_code = rendered.split("\n")[: len(code)]
        if len(out_code) != len(code):  # a lexer that merged lines: plain text is still right
            out_code = [html.escape(text) for text in code]
    it = iter(out_code)
    return [(line.kind, next(it) if line.kind in _CODE else html.escape(line.text)) for line in change.lines]


def stylesheet() -> str:
    """The CSS for the token classes, scoped to the diff view (static/lab/pygments.css)."""
    defs = str(HtmlFormatter(style="default").get_style_defs(".diff .code")).splitlines()
    # Only the token rules: the line-number and bare `pre` rules would restyle other pages.
    return "\n".join(line for line in defs if line.startswith(".diff .code ."))
