"""The HTML a run page's socket receives: htmx-ws OOB fragments, rendered without a request."""

from __future__ import annotations

from providers.schema import Message
from runs.models import Run
from runs.rendering import append_html, cursor_html, message_html, transcript_html
from runs.transcripts import PAGE, TAIL, Tail, indexed, transcript_index, transcript_tail

# More missed messages than this and the page is re-rendered from its last page instead.
MAX_REPLAY = TAIL
# A gap this small is answered on the event loop from this process's index (the watcher has
# just advanced it); a bigger one is read in a thread.
MAX_FROM_MEMORY = 32
# The most one websocket frame carries. daphne refuses to send (and receive) a message over
# 1 MiB (websocket_max_message_size) and drops the socket; a page reconnecting asked for the
# same gap again, forever. A gap goes out in frames of at most this many bytes, each with its
# own cursor, and one message's HTML is capped well below it (runs/rendering.py).
FRAME_MAX_BYTES = 512 * 1024


def append_frames(messages: list[Message], epoch: str) -> list[str]:
    """The messages as append fragments in frames of at most FRAME_MAX_BYTES, each ending with
    the cursor of its last message: a page that got only the first frames asks for the rest."""
    frames: list[str] = []
    batch: list[str] = []
    size = 0
    for i, message in enumerate(messages):
        html = message_html(message, epoch)
        n = len(html.encode())
        if batch and size + n > FRAME_MAX_BYTES - FRAME_OVERHEAD:
            frames.append(append_html(batch, epoch, messages[i - 1].seq))
            batch, size = [], 0
        batch.append(html)
        size += n
    if batch:
        frames.append(append_html(batch, epoch, messages[-1].seq))
    return frames


# The <ol> wrapper and the cursor around a frame's messages.
FRAME_OVERHEAD = 256


def catch_up_frames(run: Run, epoch: str, seq: int, *, path: str | None = None) -> tuple[list[str], str, int]:
    """(frames, epoch, last seq) bringing a page at (epoch, seq) up to date. `path`: the
    transcript a watcher announced, read without locating it again."""
    provider = run.provider
    tail = transcript_tail(run, limit=PAGE, path=path, provider=provider)
    last = tail.next_seq - 1
    if epoch == tail.epoch and seq >= last:
        return [], tail.epoch, seq
    index = transcript_index(run, tail.path, provider=provider)
    # The tail read already located and advanced the index: read the gap from it as is — unless
    # a background full index replaced it in between (another numbering: re-render).
    if epoch == tail.epoch and last - seq <= MAX_REPLAY and index.epoch == tail.epoch:
        missed = index.messages_between(seq + 1, tail.next_seq)
        if not missed:
            return [cursor_html(tail.epoch, last)], tail.epoch, last
        return append_frames(missed, tail.epoch), tail.epoch, missed[-1].seq
    return rerender_frames(run, tail), tail.epoch, last


def catch_up_html(run: Run, epoch: str, seq: int) -> tuple[str, str, int]:
    """catch_up_frames as one fragment (for an HTTP response, or a test comparing answers)."""
    frames, epoch, last = catch_up_frames(run, epoch, seq)
    return "".join(frames), epoch, last


def rerender_frames(run: Run, tail: Tail) -> list[str]:
    """rerender_html in bounded frames: the transcript element with as many of the first
    messages as fit, then the rest appended."""
    first: list[Message] = []
    size = 0
    for message in tail.messages:
        n = len(message_html(message, tail.epoch).encode())
        if first and size + n > FRAME_MAX_BYTES - 2 * FRAME_OVERHEAD:
            break
        first.append(message)
        size += n
    head_seq = first[-1].seq if first else tail.next_seq - 1
    frames = [transcript_html(run, tail.epoch, first, tail.has_earlier) + cursor_html(tail.epoch, head_seq)]
    return frames + append_frames(tail.messages[len(first) :], tail.epoch)


def catch_up_from_memory(
    path: str, epoch: str, seq: int, *, announced_epoch: str, announced_next_seq: int
) -> tuple[list[str], int] | None:
    """(frames, last seq) bringing a page at (epoch, seq) up to what a watcher announced,
    answered from this process's index without a read, a query or a thread; None when the
    index cannot answer (another worker watches and this one has not read that far, the
    transcript was cleared, truncated or replaced, the gap is too big): then catch_up_html."""
    if not path or epoch != announced_epoch:
        return None
    key = (path, epoch, seq, announced_next_seq)
    found = _gap_frames.get(key)
    if found is not None:
        return found
    index = indexed(path)
    missed = index.gap_in_memory(epoch, seq, announced_next_seq) if index is not None else None
    if missed is None or len(missed) > MAX_FROM_MEMORY:
        return None
    if not missed:
        return [], seq
    # Every socket of the run at the same place gets the same frames: rendered once, for the
    # first of them. (Messages are immutable within an epoch, so an answer stays right.)
    found = _gap_frames[key] = (append_frames(missed, epoch), missed[-1].seq)
    while len(_gap_frames) > MAX_GAP_FRAMES:
        del _gap_frames[next(iter(_gap_frames))]
    return found


# The latest gaps answered from memory, by (path, epoch, after seq, announced next seq). Only
# the event loop's thread touches it.
_gap_frames: dict[tuple[str, str, int, int], tuple[list[str], int]] = {}
MAX_GAP_FRAMES = 256
