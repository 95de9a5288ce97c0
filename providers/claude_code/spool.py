"""Claude Code's live channel: what the hook spool says about a run right now (compat §8).

No Django. `fold` turns the spool's hook payloads (oldest first) into a `SpoolView`: the
dialogs pending (a PreToolUse for AskUserQuestion/ExitPlanMode with no PostToolUse yet, or a
PermissionRequest for any other tool: an approval), the
blocked state (a `permission_prompt` Notification for any other tool), when each picker was
last signalled (the settle anchor of the recipes), and which files are still needed (sweep).

Facts (compat §8, pinned in COMPAT-dialogs.md §8):
  * PreToolUse carries tool_name, tool_input and tool_use_id; for ExitPlanMode its tool_input
    holds the injected plan, while PostToolUse's tool_input is {} (so the dialog comes from Pre).
  * PermissionRequest fires for AskUserQuestion, ExitPlanMode and every tool whose permission
    prompt is about to be drawn (Bash, Write, Edit, WebFetch …), without a tool_use_id: it is
    paired with the latest PreToolUse of the same tool.
  * Notification(permission_prompt) fires ~6 s after a Bash prompt *or* a picker opens.
  * A declined or rejected tool gets neither PostToolUse nor Stop: the transcript's tool_result
    (fed in as `resolved`) or the next UserPromptSubmit is what ends it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from providers.bounded import put_bounded
from providers.claude_code.dialogs import ASK_TOOL, PLAN_TOOL, approval_dialog
from providers.claude_code.transcript import dialog_for
from providers.schema import Dialog, Quota, Usage

DIALOG_TOOLS = frozenset({ASK_TOOL, PLAN_TOOL})
PERMISSION_PROMPT = "permission_prompt"
# Events after which no picker or permission prompt can still be open: a new prompt was
# submitted, the turn ended, or the session (re)started or ended (compat §8).
CLEARING_EVENTS = frozenset({"UserPromptSubmit", "Stop", "SessionStart", "SessionEnd"})
SWEEP_MIN_AGE_NS = 30 * 1_000_000_000
MAX_PRES = 64  # never delete what a verifying answer may still look at


def event_time_ns(event: Mapping[str, Any]) -> int:
    """providers/hook_writer.py names each file `<time_ns:020d>-<pid>.json`: when the hook ran."""
    name = event.get("_spool_name", "")
    head = name.split("-", 1)[0] if isinstance(name, str) else ""
    return int(head) if head.isdigit() else 0


@dataclass(frozen=True, slots=True)
class PendingDialog:
    dialog: Dialog
    tool_name: str
    seen_ns: int  # the PreToolUse
    signal_ns: int  # the newest sign of the picker: its PermissionRequest when it came, else Pre
    files: tuple[str, ...] = ()
    shown: bool = False  # its PermissionRequest fired: the CLI is showing the picker now


@dataclass(frozen=True, slots=True)
class SpoolView:
    pending: tuple[PendingDialog, ...] = ()  # oldest first
    blocked: bool = False
    blocked_tool: str = ""
    posted: frozenset[str] = frozenset()  # tool_use_ids with a PostToolUse
    keep: frozenset[str] = frozenset()  # spool files the view still needs
    names: tuple[str, ...] = ()  # every file folded, oldest first
    # A PermissionRequest (the CLI showing a prompt, any tool) nothing has closed yet: keys sent
    # now would answer it. Unlike `blocked` it does not wait for the ~6 s reminder.
    permission_open: bool = False
    permission_tool_use_id: str = ""  # its tool's id when its PreToolUse was seen
    # When the newest tool began (PreToolUse) that has neither finished nor asked permission
    # yet (0: none): a prompt may be about to be shown for it.
    unsettled_tool_ns: int = 0
    # Tools still open here that only the transcript can close (a declined picker, a rejected
    # tool: a tool_result and no hook): what the caller checks it for, as `resolved`.
    open_ids: frozenset[str] = frozenset()
    # More than one prompt shown at once (compat §8: tools run in parallel each ask): the CLI
    # draws one of them ("1 of 2"), and which one the hooks do not say.
    prompts_at_once: bool = False

    @property
    def dialog(self) -> Dialog | None:
        # Offered only when it is surely the one on screen: keys for one prompt would answer
        # whichever the CLI draws. With several, the operator answers them in the terminal.
        if self.prompts_at_once or not self.pending:
            return None
        return self.pending[-1].dialog

    def find(self, tool_use_id: str) -> PendingDialog | None:
        return next((p for p in self.pending if p.dialog.tool_use_id == tool_use_id), None)


@dataclass(slots=True)
class _Fold:
    resolved: frozenset[str] | set[str]
    rules_load: bool = True  # approval_dialog's: a saved rule takes effect in this run
    pending: OrderedDict[str, PendingDialog] = field(default_factory=OrderedDict)
    posted: set[str] = field(default_factory=set)
    last_pre: dict[str, tuple[str, str]] = field(default_factory=dict)  # tool_name → (id, file)
    # Recent PreToolUses (id → tool, input, file): a PermissionRequest repeats its tool's input,
    # which tells two calls of one tool apart when several are issued in one turn.
    pres: dict[str, tuple[str, object, str]] = field(default_factory=dict)
    permission: tuple[str, str, str] | None = None  # (tool_name, tool_use_id, file)
    blocked: tuple[str, str, tuple[str, ...]] | None = None  # (tool_name, tool_use_id, files)
    session_start: str = ""
    unsettled: dict[str, int] = field(default_factory=dict)  # tool_use_id → PreToolUse time

    def clear(self) -> None:
        self.pending.clear()
        self.permission = None
        self.blocked = None
        self.unsettled.clear()

    def paired_pre(self, tool: str, tool_input: object) -> tuple[str, str]:
        """The PreToolUse a PermissionRequest is about (compat §8: it has no tool_use_id): the
        latest unanswered one of that tool with the same input, else the tool's latest."""
        for tool_use_id, (name, pre_input, file) in reversed(self.pres.items()):
            if name == tool and pre_input == tool_input and tool_use_id not in self.posted:
                return tool_use_id, file
        return self.last_pre.get(tool, ("", ""))

    def event(self, e: Mapping[str, Any]) -> None:
        name = e.get("hook_event_name")
        file = str(e.get("_spool_name", ""))
        raw_tool, raw_id = e.get("tool_name"), e.get("tool_use_id")
        tool: str = raw_tool if isinstance(raw_tool, str) else ""
        tool_use_id: str = raw_id if isinstance(raw_id, str) else ""
        if name in CLEARING_EVENTS:
            self.clear()
            if name == "SessionStart":
                self.session_start = file  # locate_transcript needs the newest one
            return
        if name == "PreToolUse" and tool_use_id:
            self.last_pre[tool] = (tool_use_id, file)
            put_bounded(self.pres, tool_use_id, (tool, e.get("tool_input"), file), MAX_PRES)
            self.unsettled[tool_use_id] = event_time_ns(e)
            if tool in DIALOG_TOOLS and tool_use_id not in self.posted:
                tool_input = e.get("tool_input")
                dialog = dialog_for(tool_use_id, tool, tool_input if isinstance(tool_input, dict) else {})
                if dialog is not None:
                    at = event_time_ns(e)
                    self.pending[tool_use_id] = PendingDialog(dialog, tool, at, at, (file,))
        elif name == "PermissionRequest":
            pre_id, pre_file = self.paired_pre(tool, e.get("tool_input"))
            self.permission = (tool, pre_id, file)
            self.unsettled.pop(pre_id, None)
            if tool not in DIALOG_TOOLS and pre_id and pre_id not in self.posted:
                # compat §7 "Approvals": the permission prompt for any other tool, drawn right
                # after this hook; answerable from the page until its PostToolUse (allowed),
                # its transcript tool_result (denied) or a clearing event.
                tool_input = e.get("tool_input")
                dialog = approval_dialog(
                    pre_id,
                    tool,
                    tool_input if isinstance(tool_input, dict) else {},
                    e.get("permission_suggestions"),
                    rules_load=self.rules_load,
                )
                at = event_time_ns(e)
                files = tuple(f for f in (pre_file, file) if f)
                self.pending[pre_id] = PendingDialog(dialog, tool, at, at, files, shown=True)
            elif tool in DIALOG_TOOLS and pre_id in self.pending:
                p = self.pending[pre_id]
                # The permission request is the picker being shown: the later, better anchor.
                self.pending[pre_id] = PendingDialog(
                    p.dialog, p.tool_name, p.seen_ns, event_time_ns(e), (*p.files, file), shown=True
                )
        elif name == "Notification":
            if e.get("notification_type") != PERMISSION_PROMPT:
                return  # idle_prompt and the like say nothing about a blocked tool
            tool_name, pre_id, perm_file = self.permission or ("", "", "")
            if tool_name in DIALOG_TOOLS or pre_id in self.pending or (not tool_name and self.pending):
                return  # the prompt's own reminder: its dialog already stands for it
            files = tuple(f for f in (perm_file, self.last_pre.get(tool_name, ("", ""))[1], file) if f)
            self.blocked = (tool_name, pre_id, files)
        elif name == "PostToolUse":
            if tool_use_id:
                self.posted.add(tool_use_id)
                self.unsettled.pop(tool_use_id, None)
                self.pending.pop(tool_use_id, None)
            if self.blocked is not None and (not self.blocked[1] or self.blocked[1] == tool_use_id):
                self.blocked = None
            if self.permission is not None and self.permission[1] in ("", tool_use_id):
                self.permission = None

    def open_ids(self) -> frozenset[str]:
        ids = {*self.pending, *self.unsettled}
        if self.blocked is not None:
            ids.add(self.blocked[1])
        if self.permission is not None:
            ids.add(self.permission[1])
        ids.discard("")
        return frozenset(ids)

    def finish(self) -> None:
        # The transcript's tool_results (a decline writes one, a PostToolUse never comes).
        for tool_use_id in [t for t in self.pending if t in self.resolved]:
            del self.pending[tool_use_id]
        if self.blocked is not None and self.blocked[1] and self.blocked[1] in self.resolved:
            self.blocked = None
        if self.permission is not None and self.permission[1] and self.permission[1] in self.resolved:
            self.permission = None
        for tool_use_id in [t for t in self.unsettled if t in self.resolved]:
            del self.unsettled[tool_use_id]


def fold(
    events: Iterable[Mapping[str, Any]],
    resolved: frozenset[str] | set[str] = frozenset(),
    *,
    rules_load: bool = True,
) -> SpoolView:
    """The spool's view of the run; `resolved` holds tool_use_ids the transcript shows answered,
    `rules_load` whether the run loads the rules "don't ask again" saves (approval_dialog)."""
    f = _Fold(resolved=resolved, rules_load=rules_load)
    names: list[str] = []
    for e in events:
        names.append(str(e.get("_spool_name", "")))
        f.event(e)
    f.finish()
    keep = {f.session_start} if f.session_start else set()
    for p in f.pending.values():
        keep.update(p.files)
    if f.blocked is not None:
        keep.update(f.blocked[2])
    if f.permission is not None:
        keep.add(f.permission[2])
        keep.add(f.last_pre.get(f.permission[0], ("", ""))[1])
    at_once = sum(p.shown for p in f.pending.values()) > 1
    return SpoolView(
        pending=tuple(f.pending.values()),
        blocked=f.blocked is not None or at_once,
        blocked_tool=f.blocked[0] if f.blocked else "",
        posted=frozenset(f.posted),
        keep=frozenset(k for k in keep if k),
        names=tuple(names),
        permission_open=f.permission is not None,
        permission_tool_use_id=f.permission[1] if f.permission else "",
        unsettled_tool_ns=max(f.unsettled.values(), default=0),
        open_ids=f.open_ids(),
        prompts_at_once=at_once,
    )


def sweepable(view: SpoolView, now_ns: int, min_age_ns: int = SWEEP_MIN_AGE_NS) -> list[str]:
    """Files the view no longer needs and old enough that no answer being verified reads them.
    Deleting them leaves the fold of the rest unchanged: a resolved Pre goes with its Post."""
    out = []
    for name in view.names:
        if not name or name in view.keep:
            continue
        at = event_time_ns({"_spool_name": name})
        if at and now_ns - at >= min_age_ns:
            out.append(name)
    return out


# compat §16: the statusLine payload's account limits, in the order the page shows them.
QUOTA_NAMES = (("five_hour", "5-hour"), ("seven_day", "7-day"))


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def usage_from_status(data: Mapping[str, Any], at_ns: int = 0) -> Usage:
    """compat §16: what a statusLine payload says about the context and the account. A field
    the CLI sent as null or left out stays None ("not reported"): before the first reply the
    context's figures are null, and an API key has no `rate_limits`."""
    window = data.get("context_window")
    window = window if isinstance(window, Mapping) else {}
    current = window.get("current_usage")
    current = current if isinstance(current, Mapping) else None
    context = turn = None
    if current is not None:
        parts = [
            _number(current.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        context = int(sum(p or 0 for p in parts))
        turn = context + int(_number(current.get("output_tokens")) or 0)
    size = _number(window.get("context_window_size"))
    percent = _number(window.get("used_percentage"))
    limits = data.get("rate_limits")
    quotas: tuple[Quota, ...] | None = None
    if isinstance(limits, Mapping):
        found = []
        for key, name in QUOTA_NAMES:
            entry = limits.get(key)
            used = _number(entry.get("used_percentage")) if isinstance(entry, Mapping) else None
            if isinstance(entry, Mapping) and used is not None:
                resets = _number(entry.get("resets_at"))
                found.append(Quota(name=name, used_percent=used, resets_at=int(resets or 0)))
        quotas = tuple(found) or None
    return Usage(
        context_tokens=context,
        context_window=int(size) if size else None,
        context_percent=percent if current is not None else None,
        turn_tokens=turn,
        quotas=quotas,
        at_ns=at_ns,
    )
