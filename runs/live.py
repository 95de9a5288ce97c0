"""The HTML a run page's socket receives: htmx-ws OOB fragments, rendered without a request."""

from __future__ import annotations

from django.template.loader import render_to_string

from providers.schema import Message
from runs.models import Run
from runs.rendering import message_html
from runs.transcripts import PAGE, TAIL, Tail, indexed, transcript_index, transcript_tail

# More missed messages than this and the page is re-rendered from its last page instead.
MAX_REPLAY = TAIL
# A gap this small is answered on the event loop from this process's index (the watcher has
# just advanced it and rendered the new messages); a bigger one is read in a thread.
MAX_FROM_MEMORY = 32


def append_html(items: list[str]) -> str:
    return f'<ol hx-swap-oob="beforeend:#transcript">{"".join(items)}</ol>'


def cursor_html(epoch: str, seq: int) -> str:
    return f'<div id="cursor" hx-swap-oob="true" data-epoch="{epoch}" data-seq="{seq}"></div>'


def catch_up_html(run: Run, epoch: str, seq: int) -> tuple[str, str, int]:
    """(fragment, epoch, last seq) bringing a page at (epoch, seq) up to date."""
    tail = transcript_tail(run, limit=PAGE)
    last = tail.next_seq - 1
    if epoch == tail.epoch and seq >= last:
        return "", tail.epoch, seq
    index = transcript_index(run, tail.path)
    # The tail read already located and advanced the index: read the gap from it as is — unless
    # a background full index replaced it in between (another numbering: re-render).
    if epoch == tail.epoch and last - seq <= MAX_REPLAY and index.epoch == tail.epoch:
        missed = index.messages_between(seq + 1, tail.next_seq)
        if missed:
            last = missed[-1].seq
        html = append_html([message_html(m, tail.epoch) for m in missed])
        return html + cursor_html(tail.epoch, last), tail.epoch, last
    return rerender_html(run, tail), tail.epoch, last


def rerender_html(run: Run, tail: Tail) -> str:
    """The whole transcript element and the cursor, as OOB fragments: for a page showing
    another numbering of the run's transcript."""
    return transcript_html(run, tail.epoch, tail.messages, tail.has_earlier) + cursor_html(
        tail.epoch, tail.next_seq - 1
    )


def catch_up_from_memory(
    path: str, epoch: str, seq: int, *, announced_epoch: str, announced_next_seq: int
) -> tuple[str, int] | None:
    """(fragment, last seq) bringing a page at (epoch, seq) up to what a watcher announced,
    answered from this process's index without a read, a query or a thread; None when the
    index cannot answer (another worker watches and this one has not read that far, the
    transcript was cleared, truncated or replaced, the gap is too big): then catch_up_html."""
    if not path or epoch != announced_epoch:
        return None
    index = indexed(path)
    missed = index.gap_in_memory(epoch, seq, announced_next_seq) if index is not None else None
    if missed is None or len(missed) > MAX_FROM_MEMORY:
        return None
    if not missed:
        return "", seq
    last = missed[-1].seq
    return append_html([message_html(m, epoch) for m in missed]) + cursor_html(epoch, last), last


def transcript_html(run: Run, epoch: str, messages: list[Message], has_earlier: bool) -> str:
    return render_to_string(
        "runs/detail.html#transcript",
        {
            "run": run,
            "epoch": epoch,
            "transcript_messages": messages,
            "has_earlier": has_earlier,
            "oob": True,
        },
    )
