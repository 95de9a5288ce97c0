"""Answering what Claude Code asks (compat §7): a dialog's recipe played as keys after the
picker settled, verified by its hook or its tool_result, retried only when nothing at all
landed. Keys only on an operator's answer. The fourth floor of ClaudeCodeProvider, beside
replying."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import orjson

from providers.claude_code import recipes
from providers.claude_code.dialogs import Intent, intent_for
from providers.claude_code.livesignals import event_time_ns
from providers.claude_code.reading import NewLines, transcript_size
from providers.claude_code.signals import POLL_S, Signals
from providers.claude_code.transcript import result_mismatch
from providers.errors import ReplyNotDelivered, SessionGone, StaleDialog
from providers.hookspool import spool_events
from providers.outbox import keys_lock, last_interrupt_ns
from providers.schema import Answer, Dialog, RunHandle
from providers.tmux import Tmux

# compat §7 (verification): how long a played answer may take to be recorded before lab looks
# at whether a retry is safe, and the overall bound before it reports "not recorded".
VERIFY_RETRY_S = 3.0
# compat §8: PermissionRequest fires for AskUserQuestion and ExitPlanMode as the picker is
# shown; keys sent before it land nowhere useful (run 2 of the live suite: an Enter sent on the
# PreToolUse anchor was lost, the PermissionRequest came after it). Bounded wait for it.
SHOWN_WAIT_S = 3.0
VERIFY_TIMEOUT_S = 15.0
BUSY = "An interrupt is being sent to Claude Code; nothing was answered. Try again."


class Answering(Signals):
    def answer_dialog(self, run: RunHandle, dialog: Dialog, answers: Sequence[Answer]) -> None:
        """Play the recipe for `answers` (an empty sequence declines: Esc) and wait, bounded,
        until the CLI records the result. compat §7.

        Raises DialogNotAnswerable before anything is sent when the answers do not fit,
        ReplyNotDelivered when keys were sent but nothing was recorded in time (the caller must
        then not offer the same answer again: some keys may have landed)."""
        recipe = recipes.recipe_for(dialog, answers)
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        intent = None if recipe.declines else intent_for(dialog, recipes.normalized_answers(dialog, answers))
        path = self.locate_transcript(run)
        self._settle(run, dialog, recipe.settle)
        with keys_lock(run, busy=BUSY):
            self._refuse_if_gone(run, dialog)
            if intent is not None:
                # Recorded before the first key, so the backstop sees it whenever the result
                # lands; not before the check above, or a refused answer would be compared
                # with a result it never caused.
                self._record_intent(intent)
            before = (transcript_size(path), set(self._spool_names(run)))
            self._play(tmux, run, recipe)
        if self._wait_answered(run, dialog.tool_use_id, path, before[0], VERIFY_RETRY_S, intent):
            return
        # compat §7 (dropped keys): a key sent while the picker is still being drawn is lost,
        # not queued, and the drop window is the start of the sequence. A retry is safe only if
        # nothing at all happened (no byte in the transcript, no hook fired: the picker is
        # untouched on row 0) and the recipe is one screen of bare keys, so a partial landing
        # can only have been a total loss. Anything else is left to the operator: resending
        # Down/paste/Enter into a screen that moved on could answer wrongly or send a prompt.
        if recipe.retry_safe and self._untouched(run, dialog, path, *before):
            self._settle(run, dialog, recipe.settle)  # from a later anchor if the picker came late
            with keys_lock(run, busy=BUSY):
                self._refuse_if_gone(run, dialog)
                self._play(tmux, run, recipe)
        if not self._wait_answered(run, dialog.tool_use_id, path, before[0], VERIFY_TIMEOUT_S, intent):
            if recipe.name.startswith("approval-allow"):
                # An allowed tool records its result only when it finishes (compat §7): a long
                # command is not a lost answer.
                raise ReplyNotDelivered(
                    "The answer was sent, but Claude Code has recorded no result for the tool "
                    "yet: it may still be running. The transcript shows the result when it "
                    "lands; check the terminal with the attach command if it does not."
                )
            raise ReplyNotDelivered(
                "The answer was sent but Claude Code has not recorded it. Check the terminal "
                "with the attach command before answering again."
            )

    def _refuse_if_gone(self, run: RunHandle, dialog: Dialog) -> None:
        """Under keys_lock, right before the first key: the dialog is still the one on screen. An
        Esc lab sent since it appeared (an interrupt whose check came before the prompt) has
        declined it, though the CLI may not have written so yet; a tool_result, a clearing hook
        or a new prompt has closed it. Keys sent then would land in the composer as a prompt."""
        view = self.spool_view(run) if run.spool_dir else None
        if view is not None and view.prompts_at_once:
            raise StaleDialog(
                "Claude Code now asks more than one permission at once and lab cannot tell which "
                "one its terminal shows: answer them there. Nothing was sent."
            )
        pending = view.find(dialog.tool_use_id) if view is not None else None
        if pending is None or pending.dialog.all_questions != dialog.all_questions:
            raise StaleDialog("This dialog is no longer waiting for an answer. Nothing was sent.")
        appeared = min(
            [pending.seen_ns, *(event_time_ns({"_spool_name": f}) or pending.seen_ns for f in pending.files)]
        )
        if last_interrupt_ns(run) >= appeared:
            raise StaleDialog(
                "An interrupt reached Claude Code after this prompt appeared, and its Esc "
                "dismissed the prompt. Nothing was sent."
            )

    def _untouched(self, run: RunHandle, dialog: Dialog, path: str, size: int, names: set[str]) -> bool:
        """Nothing landed: the transcript did not grow, the picker is still pending, and the only
        hooks since the keys are the picker's own (PermissionRequest, Notification)."""
        if transcript_size(path) != size or self.spool_view(run).find(dialog.tool_use_id) is None:
            return False
        for event in spool_events(run.spool_dir):
            if event.get("_spool_name") in names:
                continue
            if event.get("hook_event_name") not in ("PermissionRequest", "Notification"):
                return False
        return True

    def _spool_names(self, run: RunHandle) -> list[str]:
        try:
            return [n for n in os.listdir(run.spool_dir) if n.endswith(".json")] if run.spool_dir else []
        except FileNotFoundError:
            return []

    def _settle(self, run: RunHandle, dialog: Dialog, settle: float) -> None:
        """compat §7 (settle): wait until `settle` after the newest sign of the picker: its
        PermissionRequest hook (the picker being shown; waited for up to SHOWN_WAIT_S), else its
        PreToolUse, or the first transcript read that showed the tool_use. Re-evaluated while
        waiting, since a later sign moves the anchor. Unknown dialog: settle from now."""
        start_ns = time.time_ns()
        shown_deadline = time.monotonic() + SHOWN_WAIT_S
        while True:
            pending = self.spool_view(run).find(dialog.tool_use_id)
            if pending is not None and not pending.shown and time.monotonic() < shown_deadline:
                time.sleep(POLL_S)
                continue
            signs = [pending.signal_ns] if pending else []
            first_seen = self.first_seen_ns(dialog.tool_use_id)
            if first_seen is not None:
                signs.append(first_seen)
            anchor = max(signs) if signs else start_ns
            wait = (anchor + settle * 1e9 - time.time_ns()) / 1e9
            if wait <= 0:
                return
            time.sleep(min(wait, 0.1))

    def _play(self, tmux: Tmux, run: RunHandle, recipe: recipes.Recipe) -> None:
        for op in recipe.ops:
            if op.kind == recipes.OpKind.PASTE:
                tmux.paste(run.tmux_session, op.value)
            else:
                tmux.send_keys(run.tmux_session, op.value)
            time.sleep(op.pause_after)

    def _wait_answered(
        self, run: RunHandle, tool_use_id: str, path: str, start: int, timeout: float, intent: Intent | None
    ) -> bool:
        """The PostToolUse hook for the id (an answer, an approval) or a tool_result for it in
        the transcript (also a decline or rejection, which get no PostToolUse, compat §8). A
        tool_result that records something else than `intent` (a rejection without the feedback
        sent: another Esc answered first) is not this answer's success: ReplyNotDelivered."""
        needle = tool_use_id.encode()
        deadline = time.monotonic() + timeout
        new = NewLines(path, start)
        while True:
            for event in spool_events(run.spool_dir):
                if event.get("hook_event_name") == "PostToolUse" and event.get("tool_use_id") == tool_use_id:
                    return True
            for line in new.read():
                if needle in line and b'"tool_result"' in line and b'"type":"user"' in line:
                    self._refuse_mismatch(line, intent)
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    def _refuse_mismatch(self, line: bytes, intent: Intent | None) -> None:
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        problem = result_mismatch(intent, entry) if intent is not None and isinstance(entry, dict) else ""
        if problem:
            raise ReplyNotDelivered(
                f"Claude Code recorded a different result than the answer lab sent: {problem}"
            )
