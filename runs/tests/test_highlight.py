"""The changes view's diff rows (runs/highlight.py): Pygments' markup, every line escaped once."""

from __future__ import annotations

from runs import highlight
from seeding import changes


def test_highlighting_escapes_and_keeps_one_row_per_line():
    change = changes.FileChange(
        path="x.py",
        status="modified",
        lines=(
            changes.Line("hunk", "@@ -1 +1 @@ def <b id=hunk>(&)"),
            changes.Line("del", 'print("<script>")'),
            changes.Line("add", "def f(): pass"),
            changes.Line("meta", "\\ No newline <i id=meta> & more"),
        ),
    )
    rows = highlight.rows(change)
    assert [kind for kind, _ in rows] == ["hunk", "del", "add", "meta"]
    assert "<script>" not in "".join(h for _, h in rows) and "&lt;script&gt;" in rows[1][1]
    assert '<span class="k">def</span>' in rows[2][1]
    # The lines Pygments does not see (a hunk header's function context, git's notes) are
    # escaped too, each exactly once.
    assert rows[0][1] == "@@ -1 +1 @@ def &lt;b id=hunk&gt;(&amp;)"
    assert rows[3][1] == "\\ No newline &lt;i id=meta&gt; &amp; more"
