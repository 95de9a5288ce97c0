"""The kit for adapters whose CLI is a TUI lab types into through tmux (docs/providers.md, "The
TUI kit").

`TuiAdapter` owns what is protocol rather than CLI fact: the reply protocol (outbox, turn,
refusals, paste, paced Enter, receipt, one retry), the interrupt and the answer protocols'
skeletons, the spool view and its cache, the located-transcript cache, the backstop's intents
(stored where every lab worker on the host reads them), the hook spool's sweep, the agent's
environment. An adapter subclasses it with declarations (its binary, its timings, its keys)
and the CLI facts behind a few methods (how it spawns, when it is ready, what records a prompt,
its spool fold and its answers), each pinned in its COMPAT file.

The refusal messages are built here once, over display_name(): every adapter says the same
true thing the same way.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import hashlib
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import orjson
from django.conf import settings

from providers.base import AgentProvider
from providers.bounded import put_bounded
from providers.errors import (
    InvalidReply,
    PromptPending,
    ReplyInFlight,
    ReplyNotDelivered,
    ReplyRefused,
    SessionGone,
    StaleDialog,
)
from providers.hookspool import SpoolSignature, spool_events, spool_signature, stale_payloads
from providers.outbox import (
    REPLY_TURN_WAIT_S,
    Outbox,
    keys_lock,
    last_interrupt_ns,
    mark_interrupt,
    normalize,
    reply_lock,
)
from providers.safefile import MAX_SPOOL_BYTES, UnsafeFile, read_head, read_regular, write_private
from providers.sanitize import sanitize_text
from providers.schema import (
    Answer,
    Attachment,
    AuthStatus,
    Cursor,
    Dialog,
    LoginStart,
    RunHandle,
    RunState,
    TranscriptRead,
)
from providers.tmux import Tmux

POLL_S = 0.05
MAX_CACHED = 256  # cached spool views and located transcripts, one per run
NEW_LINES_CHUNK = 64 * 1024 * 1024  # NewLines' bytes per call, bounded: callers poll, the rest comes next
GONE = "The agent's terminal session is gone."


class SpoolView(Protocol):
    """What the kit reads of an adapter's spool fold (the rest is the adapter's own)."""

    @property
    def dialog(self) -> Dialog | None: ...

    @property
    def blocked(self) -> bool: ...

    # When the newest tool began that has neither finished nor asked permission (0: none): a
    # prompt may be about to be shown for it.
    @property
    def unsettled_tool_ns(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Asking:
    """What the CLI asks now, in the words every refusal uses: `what` ("a question",
    "permission", "for approval"); `how` the operator answers it on lab's page ("allow or deny
    it"), or "" when lab offers no dialog for it and only the terminal can answer."""

    what: str
    how: str = ""


def reply_refusal(name: str, asking: Asking) -> str:
    where = "answer it above" if asking.how else "answer it in its terminal"
    return f"{name} is asking {asking.what}: {where}. Nothing was sent."


def interrupt_refusal(name: str, asking: Asking, key: str = "Esc") -> str:
    """Why an interrupt was not sent while the CLI asks something: its key would answer it."""
    if asking.how:
        head = f"{name} is asking {asking.what}: {asking.how} above."
    else:
        head = f"{name} is asking {asking.what} in its terminal: answer it there."
    return f"{head} The interrupt was not sent: its {key} would have answered for you."


class Receipt:
    """What a send waits for in the transcript: its text (`want`, normalized; "" for a message
    of images alone) and each image's path among those the CLI recorded as image input."""

    def __init__(self, adapter: TuiAdapter[Any], want: str, images: frozenset[str] = frozenset()) -> None:
        self.adapter, self.want, self.images = adapter, want, images
        self.text_seen = False
        self.images_seen: set[str] = set()
        self.path, self.offset = "", 0

    def feed(self, line: bytes) -> None:
        if self.images:
            self.images_seen.update(p for p in self.adapter.records_images(line) if p in self.images)
        if self.want and not self.text_seen and self.adapter.records_prompt(line, self.want):
            self.text_seen = True
        elif not self.want and self.images and self.images_seen:
            self.text_seen = True  # an image-only message: its first recorded image is its line

    @property
    def done(self) -> bool:
        return self.text_seen and self.images <= self.images_seen


@dataclass(frozen=True, slots=True)
class AnswerPlan:
    """An adapter's answer to a dialog before any key: what it plays (`keys`, the adapter's
    own), the backstop's intent (JSON-able; None: nothing to check), and its verification and
    retry facts, read by the adapter's own verify_answer."""

    keys: Any
    intent: Any = None


@dataclass(frozen=True, slots=True)
class AnswerMark:
    """Where things stood right before an answer's first key."""

    path: str  # the transcript
    size: int
    spool_names: frozenset[str]


class NewLines:
    """The complete lines appended to a transcript since `offset`, call by call, at most
    NEW_LINES_CHUNK bytes a call; a partial last line waits for its newline. A missing file has
    none yet, and neither has anything but a regular file."""

    def __init__(self, path: str, offset: int) -> None:
        self.path, self.offset, self.pending = path, offset, b""

    def read(self) -> list[bytes]:
        try:
            chunk = read_head(self.path, NEW_LINES_CHUNK, offset=self.offset)
        except (FileNotFoundError, UnsafeFile):
            return []  # not there yet; the transcript reader says what is wrong with a bad file
        self.offset += len(chunk)
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        return lines


def transcript_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def spool_names(spool_dir: str) -> frozenset[str]:
    """The hook payloads in the spool now, listed through hookspool (one listing per wake)."""
    if not spool_dir:
        return frozenset()
    return frozenset(
        n for n in spool_signature(spool_dir)[1] if n.endswith(".json") and not n.startswith(".")
    )


@functools.lru_cache(maxsize=1024)
def _intents_path(runs_dir: str, transcript: str) -> Path:
    # Worked out once per transcript: every read of an appended line asks for it.
    digest = hashlib.sha256(transcript.encode()).hexdigest()[:32]
    return Path(runs_dir) / ".intents" / f"{digest}.json"


class IntentStore:
    """The backstop's intents (docs/architecture.md, "Dialog answering"): what lab meant to
    answer, per dialog id, so a transcript reader can warn when the recorded result differs.

    Several lab workers serve one host (the socket on one, the watcher on another), and the one
    that reads the result is often not the one that answered: the intents live in a private
    file per transcript under LAB_RUNS_DIR/.intents, named by the hash of the transcript's path
    (all a reader has), the newest MAX of them. A read costs one stat while the file is
    unchanged."""

    MAX = 100

    def __init__(self, encode: Callable[[Any], Any], decode: Callable[[Any], Any]) -> None:
        self.encode, self.decode = encode, decode
        self._guard = threading.Lock()
        # file → (its stat key, the JSON as stored, the intents decoded)
        self._cache: dict[str, tuple[tuple[int, int, int], dict[str, Any], dict[str, Any]]] = {}

    @staticmethod
    def path_for(transcript: str) -> Path:
        return _intents_path(settings.LAB_RUNS_DIR, transcript)

    def read(self, transcript: str) -> Mapping[str, Any]:
        """The intents recorded for the transcript, decoded (do not modify)."""
        return self._load(transcript)[1]

    def _load(self, transcript: str) -> tuple[dict[str, Any], dict[str, Any]]:
        if not transcript:
            return {}, {}
        path = self.path_for(transcript)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return {}, {}
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        with self._guard:
            cached = self._cache.get(str(path))
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        try:
            data = orjson.loads(read_regular(path, MAX_SPOOL_BYTES))
        except (OSError, orjson.JSONDecodeError):
            data = {}
        raw: dict[str, Any] = data if isinstance(data, dict) else {}
        decoded = {}
        for dialog_id, value in raw.items():
            with contextlib.suppress(ValueError, TypeError, KeyError):
                decoded[dialog_id] = self.decode(value)  # one it cannot read stays silent
        with self._guard:
            put_bounded(self._cache, str(path), (key, raw, decoded), MAX_CACHED)
        return raw, decoded

    def record(self, transcript: str, dialog_id: str, intent: Any) -> None:
        """Called under the run's keys_lock, which serializes the answers to one transcript."""
        if not transcript:
            return
        path = self.path_for(transcript)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        raw = dict(self._load(transcript)[0])
        put_bounded(raw, dialog_id, self.encode(intent), self.MAX)  # the oldest's check goes silent
        write_private(path, orjson.dumps(raw))


class TuiAdapter[V: SpoolView](AgentProvider):
    """An AgentProvider for a TUI in tmux whose live channel is a hook spool. Subclasses declare
    the class attributes below and implement the abstract methods; everything else is the kit's.
    """

    # --- declarations ---------------------------------------------------------------------
    binary_name: ClassVar[str]
    # The agent's environment beyond the basics: defaults LAB_AGENT_ENV may override.
    env_defaults: ClassVar[Mapping[str, str]] = {}
    # A leading prefix that switches the composer into a mode that acts at once (a shell).
    shell_prefix: ClassVar[str] = "!"
    # How long after a tool began its permission prompt may still come: a reply waits that long.
    tool_settle_s: ClassVar[float] = 2.0
    # An unrecorded reply's Enter is retried once after this; then it is reported unrecorded.
    retry_enter_after_s: ClassVar[float] = 3.0
    delivery_timeout_s: ClassVar[float] = 20.0
    # The key that stops a working turn, and its name in messages.
    interrupt_key: ClassVar[str] = "Escape"
    interrupt_key_name: ClassVar[str] = "Esc"
    # How long the CLI takes to attach a pasted image path (PastesAttachments).
    image_settle_s: ClassVar[float] = 1.0
    # Hook payloads older than this are swept (longer than a turn is likely to need them).
    sweep_age_s: ClassVar[float] = 600.0

    def __init__(self) -> None:
        # One instance per process (providers.registry): this state outlives a request. The
        # guard is held for dict operations only, never across a syscall (py-spy showed every
        # run's watcher queueing behind a provider-wide lock held across a listdir).
        self._kit_guard = threading.Lock()
        self._views: dict[str, tuple[SpoolSignature, frozenset[str], V]] = {}
        self._located: dict[str, tuple[Hashable, str]] = {}
        self._started: dict[str, None] = {}
        self.intent_store = IntentStore(self.encode_intent, self.decode_intent)

    # --- what the adapter supplies ------------------------------------------------------------

    @abc.abstractmethod
    def fold_spool(self, run: RunHandle, events: list[dict[str, Any]], answered: frozenset[str]) -> V:
        """The spool's hook payloads (oldest first) folded into the adapter's view; `answered`
        are dialog ids the transcript has closed though no hook did."""

    def open_ids(self, view: V) -> frozenset[str]:
        """Ids the view leaves open that only the transcript can close (a decline)."""
        return frozenset()

    def answered_among(self, run: RunHandle, ids: frozenset[str]) -> frozenset[str]:
        """Which of `ids` the run's transcript shows answered."""
        return frozenset()

    @abc.abstractmethod
    def locate_in_spool(self, run: RunHandle, events: list[dict[str, Any]]) -> str:
        """The current transcript from the spool's payloads (the clear/epoch rule)."""

    @abc.abstractmethod
    def parse_transcript(self, path: str, cursor: Cursor, intents: Mapping[str, Any]) -> TranscriptRead:
        """The adapter's pure reader, armed with the backstop's intents for this transcript."""

    @abc.abstractmethod
    def asking(self, run: RunHandle, view: V) -> Asking | None:
        """What the CLI asks now (None: nothing): keys sent now would answer it."""

    @abc.abstractmethod
    def records_prompt(self, line: bytes, want: str) -> bool:
        """Whether a transcript line records `want` (normalized) as the operator's input."""

    def records_images(self, line: bytes) -> Iterable[str]:
        """The paths of the images a transcript line records the CLI took as image input."""
        return ()

    def image_paste(self, path: str, index: int) -> str:
        """What is pasted for the index-th image of a message (its path, as the CLI takes it)."""
        return path

    @abc.abstractmethod
    def wait_ready(self, run: RunHandle, tmux: Tmux) -> None:
        """Bounded wait until the composer takes a paste; StillStarting (nothing sent) else."""

    @abc.abstractmethod
    def enter_delay(self, text: str) -> float:
        """The pause between a paste and its Enter."""

    def sweepable(self, run: RunHandle, view: V, now_ns: int) -> Iterable[str]:
        """Spool entries no longer needed: payloads older than sweep_age_s but SessionStart
        ones, and none while a dialog is pending or a tool may still ask (what it rests on)."""
        if view.dialog is not None or view.unsettled_tool_ns:
            return []
        return stale_payloads(run.spool_dir, now_ns - int(self.sweep_age_s * 1e9))

    def encode_intent(self, intent: Any) -> Any:
        """An intent as JSON (it is stored where every worker reads it)."""
        return intent

    def decode_intent(self, data: Any) -> Any:
        return data

    def clean_reply(self, text: str) -> str:
        """The adapter's own rules on a sanitized reply (characters its CLI would mangle)."""
        return text

    def special_send(self, run: RunHandle, tmux: Tmux, text: str, want: str) -> bool:
        """A send whose receipt is not a transcript line (True: sent and confirmed here)."""
        return False

    def interrupt_applies(self, run: RunHandle) -> bool:
        """Whether the interrupt key is safe to send now (False: nothing to stop, no key)."""
        return True

    @abc.abstractmethod
    def plan_answer(self, dialog: Dialog, answers: Sequence[Answer]) -> AnswerPlan:
        """The keys for `answers`, or DialogNotAnswerable before anything is sent."""

    @abc.abstractmethod
    def await_shown(self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan) -> None:
        """Bounded wait until the CLI shows the dialog and keys sent to it land."""

    @abc.abstractmethod
    def pending_since(self, run: RunHandle, dialog: Dialog) -> int | None:
        """When the dialog appeared (time_ns) if it is still the one waiting; None if gone."""

    @abc.abstractmethod
    def play_answer(self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan) -> None: ...

    @abc.abstractmethod
    def verify_answer(
        self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan, mark: AnswerMark
    ) -> None:
        """Bounded wait for the recorded result, with the adapter's retry policy;
        ReplyNotDelivered when it did not land."""

    # --- process ------------------------------------------------------------------------------

    def binary(self) -> str:
        return str(Path(settings.LAB_AGENT_BIN_DIR) / self.binary_name)

    def home(self) -> Path:
        return Path(settings.LAB_AGENT_HOME or os.environ.get("HOME", "/root")).expanduser()

    def env_overrides(self) -> dict[str, str]:
        """Variables set after LAB_AGENT_ENV: what lab itself decides."""
        return {}

    def agent_env(self) -> dict[str, str]:
        env = {
            "HOME": str(self.home()),
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "TERM": "xterm-256color",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "USER": os.environ.get("USER", "root"),
            "SHELL": os.environ.get("SHELL", "/bin/bash"),
            **self.env_defaults,
        }
        env.update(settings.LAB_AGENT_ENV)
        env.update(self.env_overrides())
        return env

    def live_tmux(self, run: RunHandle) -> Tmux:
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone(GONE)
        return tmux

    # --- the live channel -------------------------------------------------------------------

    def spool_view(self, run: RunHandle) -> V:
        """The spool folded, with what it leaves open checked against the transcript. Cached on
        the spool's signature and the ids the transcript answered: the watcher calls this on
        every wake, and an unchanged spool costs one stat + listdir."""
        signature = spool_signature(run.spool_dir) if run.spool_dir else (0, ())
        with self._kit_guard:
            cached = self._views.get(run.spool_dir)
        if cached is None or cached[0] != signature:
            events = spool_events(run.spool_dir)
            cached = (signature, frozenset(), self.fold_spool(run, events, frozenset()))
        open_ids = self.open_ids(cached[2]) | cached[1]
        answered = self.answered_among(run, open_ids) if open_ids else frozenset()
        if answered != cached[1]:
            cached = (signature, answered, self.fold_spool(run, spool_events(run.spool_dir), answered))
        with self._kit_guard:
            put_bounded(self._views, run.spool_dir, cached, MAX_CACHED)
        return cached[2]

    def pending_dialog(self, run: RunHandle) -> Dialog | None:
        return self.spool_view(run).dialog

    def blocked_state(self, run: RunHandle) -> RunState | None:
        # A prompt lab has no dialog for: needs_input and the attach command.
        return RunState.NEEDS_INPUT if self.spool_view(run).blocked else None

    def sweep(self, run: RunHandle) -> None:
        if not run.spool_dir:
            return
        view = self.spool_view(run)
        for name in self.sweepable(run, view, time.time_ns()):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(run.spool_dir, name))

    def session_started(self, run: RunHandle, started_ns: int) -> bool:
        """Remembers a run whose session has started (`started_ns` nonzero), so the question
        costs no spool read once it is answered."""
        with self._kit_guard:
            if run.spool_dir in self._started:
                return True
        if not started_ns:
            return False
        with self._kit_guard:
            put_bounded(self._started, run.spool_dir, None, MAX_CACHED)
        return True

    # --- transcripts --------------------------------------------------------------------------

    def locate_transcript(self, run: RunHandle) -> str:
        if not run.spool_dir:
            return run.transcript_path
        # Called on every watcher wake and socket catch-up: the spool is read again only when
        # it changed.
        key = (spool_signature(run.spool_dir), run.transcript_path)
        with self._kit_guard:
            cached = self._located.get(run.spool_dir)
        if cached is not None and cached[0] == key:
            return cached[1]
        located = self.locate_in_spool(run, spool_events(run.spool_dir))
        with self._kit_guard:
            put_bounded(self._located, run.spool_dir, (key, located), MAX_CACHED)
        return located

    def read_transcript(self, path: str, cursor: Cursor) -> TranscriptRead:
        return self.parse_transcript(path, cursor, self.intent_store.read(path))

    def intents(self, path: str) -> dict[str, Any]:
        """The backstop's recorded intents for a transcript (tests, diagnostics)."""
        return dict(self.intent_store.read(path))

    # --- the reply protocol -------------------------------------------------------------------

    def prepare_reply(self, text: str) -> str:
        """The text as lab will paste it, or ReplyRefused/InvalidReply before anything is sent."""
        text = self.clean_reply(sanitize_text(text, max_bytes=settings.LAB_REPLY_MAX_BYTES))
        if not text.strip():
            raise InvalidReply("The text is empty.")
        if self.shell_prefix and text.startswith(self.shell_prefix):
            # Only a leading one: " !x" is text.
            raise ReplyRefused(
                f"A message starting with “{self.shell_prefix}” runs as a shell command in "
                f"{self.display_name()}'s terminal, so lab does not send it. To send it as text, "
                "start it with a space."
            )
        return text

    def reply(self, run: RunHandle, text: str, *, again: bool = False) -> None:
        self._deliver(run, self.prepare_reply(text), (), again=again)

    def _deliver(self, run: RunHandle, text: str, images: Sequence[Attachment], *, again: bool) -> None:
        """The reply protocol; `images` are pasted, in order, as paths the CLI turns into its own
        image input (PastesAttachments), before the text."""
        tmux = self.live_tmux(run)
        want = normalize(text)
        # The outbox's key: an image-only message is known by its files.
        key = want or normalize(" ".join(a.path for a in images))
        name = self.display_name()
        # A send ahead (New conversation's /clear, another tab's message) is waited for: this
        # one then goes, into the new conversation. The outbox still refuses a second copy.
        with reply_lock(run, wait=REPLY_TURN_WAIT_S):
            outbox = Outbox(run.spool_dir)
            pending = outbox.find(key)
            if pending is not None and not again:
                self._refuse_resend(run, outbox, pending)
            self._refuse_if_asking(run)
            self.wait_ready(run, tmux)
            self._wait_tool_settled(run)
            self._refuse_if_asking(run)
            if not images and self.special_send(run, tmux, text, want):
                return
            path = self.locate_transcript(run)
            start = transcript_size(path)
            outbox.add({"want": key, "path": path, "offset": start, "at": time.time()})
            for index, image in enumerate(images):
                tmux.paste(run.tmux_session, self.image_paste(image.path, index))
                # The CLI reads the file and puts its placeholder in; it writes nothing to say
                # so, and lab never reads the pane: the receipt below checks every image.
                time.sleep(self.image_settle_s)
            if text:
                tmux.paste(run.tmux_session, f" {text}" if images else text)
            time.sleep(self.enter_delay(text))
            if asking := self._asking(run):
                raise ReplyNotDelivered(
                    f"{name} began asking {asking.what} while the message was being pasted, so lab "
                    "did not press Enter. The text may be in its input box; answer the prompt first."
                )
            tmux.send_keys(run.tmux_session, "Enter")
            receipt = Receipt(self, want, frozenset(a.path for a in images))
            if not self._wait_recorded(run, path, start, receipt, timeout=self.retry_enter_after_s):
                # An Enter that raced the paste is retried once: on a composer holding the text it
                # submits it, on an empty one it does nothing. Never into a prompt.
                if asking := self._asking(run):
                    raise ReplyNotDelivered(
                        f"{name} has not recorded the message and is now asking {asking.what}; lab "
                        "did not press Enter again. Answer the prompt first."
                    )
                if not receipt.text_seen:
                    tmux.send_keys(run.tmux_session, "Enter")
            if not self._wait_recorded(run, path, start, receipt, timeout=self.delivery_timeout_s):
                if receipt.text_seen:
                    outbox.remove(key)
                    missing = ", ".join(a.name for a in images if a.path not in receipt.images_seen)
                    raise ReplyNotDelivered(
                        f"{name} recorded the message, but not as an image: {missing}. It may have "
                        "got the file's path as text instead."
                    )
                # lab cannot see the composer (it never reads the pane): say what it knows.
                raise ReplyNotDelivered(
                    f"{name} has not recorded the message yet, so lab cannot tell whether it "
                    "arrived. If it lands, it appears in the chat. lab will not send the same text "
                    "again until then."
                )
            outbox.remove(key)

    def _refuse_resend(self, run: RunHandle, outbox: Outbox, pending: dict[str, object]) -> None:
        """The same text as an unconfirmed earlier send: never a second copy by accident."""
        name = self.display_name()
        path, offset = str(pending.get("path", "")), pending.get("offset", 0)
        landed = isinstance(offset, int) and self._wait_recorded(
            run, path, offset, Receipt(self, str(pending["want"])), timeout=0
        )
        if landed:
            outbox.remove(str(pending["want"]))
            raise ReplyInFlight(
                f"That message reached {name} after all: it is in the chat. Send it again only if "
                "you mean to send it twice."
            )
        age = max(0, int(time.time() - float(str(pending.get("at", 0)))))
        raise ReplyInFlight(
            f"The same message was sent {age} s ago and {name} has not recorded it yet: it may "
            f"still land, or wait in {name}'s input box. lab does not send it twice unless you "
            "choose to."
        )

    def _asking(self, run: RunHandle) -> Asking | None:
        return self.asking(run, self.spool_view(run))

    def _refuse_if_asking(self, run: RunHandle) -> None:
        if asking := self._asking(run):
            raise PromptPending(reply_refusal(self.display_name(), asking))

    def _wait_tool_settled(self, run: RunHandle) -> None:
        """A tool that just began may be about to ask permission: wait, bounded, until it asked
        (then the second refusal check refuses) or tool_settle_s passed (it runs)."""
        while True:
            began = self.spool_view(run).unsettled_tool_ns
            if not began or time.time_ns() - began >= self.tool_settle_s * 1e9:
                return
            time.sleep(POLL_S)

    def _wait_recorded(
        self, run: RunHandle, path: str, start: int, receipt: Receipt, *, timeout: float
    ) -> bool:
        """Whether the transcript records the receipt's text and images after `start`, following
        a rotation (a clear's echo, a thread's first submit lands in the new transcript);
        timeout 0 looks once. What was seen stays in the receipt across calls."""
        deadline = time.monotonic() + timeout
        new = NewLines(path, receipt.offset if receipt.path == path else start)
        while True:
            current = self.locate_transcript(run)
            if current != new.path:
                new = NewLines(current, 0)
            for line in new.read():
                receipt.feed(line)
            receipt.path, receipt.offset = new.path, new.offset - len(new.pending)
            if receipt.done:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    # --- the interrupt protocol ----------------------------------------------------------------

    def interrupt(self, run: RunHandle) -> None:
        tmux = self.live_tmux(run)
        name = self.display_name()
        busy = f"An answer is being typed into {name}'s terminal; the interrupt was not sent. Try again."
        with keys_lock(run, busy=busy):
            # On a prompt the key is an answer nobody chose, and an answer already on its way
            # would then type its keys into the composer: only the operator's answer answers.
            if asking := self._asking(run):
                raise PromptPending(interrupt_refusal(name, asking, self.interrupt_key_name))
            if not self.interrupt_applies(run):
                return
            mark_interrupt(run)
            tmux.send_keys(run.tmux_session, self.interrupt_key)

    # --- the answer protocol ---------------------------------------------------------------

    def answer_dialog(self, run: RunHandle, dialog: Dialog, answers: Sequence[Answer]) -> None:
        plan = self.plan_answer(dialog, answers)
        tmux = self.live_tmux(run)
        path = self.locate_transcript(run)
        self.await_shown(run, tmux, dialog, plan)
        with keys_lock(run, busy=self.answer_busy()):
            self.refuse_if_stale(run, dialog)
            if plan.intent is not None:
                # Recorded before the first key, so the backstop sees it whenever the result
                # lands; not before the check above, or a refused answer would be compared with
                # a result it never caused.
                self.intent_store.record(path, dialog.tool_use_id, plan.intent)
            mark = AnswerMark(path, transcript_size(path), spool_names(run.spool_dir))
            self.play_answer(run, tmux, dialog, plan)
        self.verify_answer(run, tmux, dialog, plan, mark)

    def answer_busy(self) -> str:
        return f"An interrupt is being sent to {self.display_name()}; nothing was answered. Try again."

    def refuse_if_stale(self, run: RunHandle, dialog: Dialog) -> None:
        """Under keys_lock, right before a first key: the dialog is still the one waiting, and no
        interrupt lab sent since it appeared has dismissed it (the CLI may not have written so
        yet). Keys sent to a prompt that is gone land in the composer as a prompt."""
        appeared = self.pending_since(run, dialog)
        if appeared is None:
            raise StaleDialog("This dialog is no longer waiting for an answer. Nothing was sent.")
        if last_interrupt_ns(run) >= appeared:
            raise StaleDialog(
                f"An interrupt reached {self.display_name()} after this prompt appeared, and its "
                f"{self.interrupt_key_name} dismissed the prompt. Nothing was sent."
            )


class AuthVerbs(Protocol):
    """An adapter's auth module: the four verbs, each given the provider."""

    def auth_status(self, provider: Any, /) -> AuthStatus: ...

    def login_start(self, provider: Any, /) -> LoginStart: ...

    def login_with_api_key(self, provider: Any, key: str, /) -> AuthStatus: ...

    def logout(self, provider: Any, /) -> AuthStatus: ...


class AuthFromModule:
    """The auth verbs of an adapter whose login is its auth module's functions (an API key the
    code pastes in): the adapter declares `auth` (the module) and lists this before its kit
    base."""

    auth: ClassVar[AuthVerbs]

    def auth_status(self) -> AuthStatus:
        return self.auth.auth_status(self)

    def login_start(self) -> LoginStart:
        return self.auth.login_start(self)

    def login_code(self, code: str) -> AuthStatus:
        return self.auth.login_with_api_key(self, code)

    def logout(self) -> AuthStatus:
        return self.auth.logout(self)


class PastesAttachments[V: SpoolView](TuiAdapter[V]):
    """TakesAttachments for a CLI that turns a pasted image path into its own image input and
    reads a file its prompt names. The adapter declares `image_settle_s` (how long the CLI
    takes to attach a pasted path), `records_images`, and `file_reference` (how a prompt names
    a file so the agent reads it)."""

    def file_reference(self, rel: str) -> str:
        return rel

    def reply_with_attachments(
        self, run: RunHandle, text: str, attachments: Sequence[Attachment], *, again: bool = False
    ) -> None:
        images = [a for a in attachments if a.is_image]
        mentions = [self.file_reference(a.rel) for a in attachments if not a.is_image]
        words = " ".join([*mentions, text]).strip()
        if not words and not images:
            raise InvalidReply("The text is empty.")
        self._deliver(run, self.prepare_reply(words) if words else "", images, again=again)
