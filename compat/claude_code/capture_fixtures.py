"""Re-capture the transcript fixtures in compat/claude_code/fixtures/<version>/ from live runs.

    .venv/bin/python -m compat.claude_code.capture_fixtures --out /tmp/fx                   # all scenarios
    .venv/bin/python -m compat.claude_code.capture_fixtures prompt__text_reply   # into the binary's own version folder

Each scenario starts the real TUI (fresh HOME + worktree + scripted model), drives it by hand-written
key recipes (the harness may watch its own pane), and saves every transcript file of the session with
<HOME>/<WORKTREE>/<WORKTREE_PROJECT_DIR> placeholders and giant bookkeeping strings truncated.
"""

# ruff: noqa
import argparse, json, re, shutil, struct, subprocess, tempfile, time, zlib
from pathlib import Path

from compat.claude_code.home import fixtures_dir, installed_version, prepare_home, project_dir_name
from compat.claude_code.live import *
from compat.claude_code.scripted_model import *

# compat/claude_code/fixtures/<the version of the binary under test>/ ($LAB_AGENT_BIN_DIR or node_modules)
OUT = fixtures_dir(installed_version())

BIG_TYPES = {
    "api-request-shape",
    "api-request-blob",
    "api-request",
    "attachment",
    "file-history-snapshot",
    "file-history-delta",
}


def _trunc(v, limit=1500):
    if isinstance(v, str):
        return v if len(v) <= limit else v[:limit] + f"…[truncated {len(v) - limit} chars]"
    if isinstance(v, list):
        return [_trunc(x, limit) for x in v]
    if isinstance(v, dict):
        return {k: _trunc(x, limit) for k, x in v.items()}
    return v


def sanitize_text(s, home, wt):
    for a, b in sorted(
        [(str(wt), "<WORKTREE>"), (str(home), "<HOME>"), (project_dir_name(wt), "<WORKTREE_PROJECT_DIR>")],
        key=lambda x: -len(x[0]),
    ):
        s = s.replace(a, b)
    return s


def save(name, path, home, wt, out=None):
    out = Path(out or OUT)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for raw in Path(path).read_text().splitlines():
        if not raw.strip():
            continue
        e = json.loads(raw)
        if e.get("type") in BIG_TYPES:
            e = _trunc(e)
        lines.append(sanitize_text(json.dumps(e, ensure_ascii=False), home, wt))
    (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    print("saved", name, sum(len(l) for l in lines), "bytes", len(lines), "lines")


def setup(name, script, extra=("--permission-mode", "manual"), settings=None, prep=None, env=None):
    base = Path(tempfile.mkdtemp(prefix=f"lab-{name}-"))
    home = base / "home"
    wt = base / "wt"
    home.mkdir()
    wt.mkdir()
    g = lambda *a: subprocess.run(["git", *a], cwd=wt, check=True, capture_output=True)
    g("init", "-q", "-b", "main")
    (wt / "README.md").write_text("hi\n")
    g("-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    g("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    if prep:
        prep(wt)
    m = ScriptedModel(script, log_path=str(base / "requests.jsonl")).start()
    full_env = prepare_home(home, wt, base_url=m.url, settings=settings)
    full_env.update(env or {})
    t = ClaudeTUI(full_env, wt)
    t.start(*extra)
    dt = t.wait_ready()
    print(f"[{name}] ready in {dt:.2f}s base={base}", flush=True)
    return base, m, t


SC = {}


def sc(f):
    SC[f.__name__] = f
    return f


@sc
def prompt__text_reply(m, t):
    t.prompt("hello world")
    t.wait_for(turn_ended)
    return [("prompt__text_reply", t.transcript_path)]


@sc
def reply__multiline_paste(m, t):
    t.prompt("first prompt")
    t.wait_for(turn_ended)
    body = "\n".join(f"PASTE Line {i}: some text for line {i}" for i in range(1, 8))
    t.prompt(body)
    t.wait_for(lambda ls: count_turn_durations(ls) >= 2)
    t.prompt("short single line paste")
    t.wait_for(lambda ls: count_turn_durations(ls) >= 3)
    return [("reply__multiline_paste", t.transcript_path)]


@sc
def reply__queued_while_working(m, t):
    t.prompt("SLOWFIRST please stream")
    m.wait_streaming(3)
    t.prompt("queued follow-up msg")
    t.wait_for(has_assistant_text("Got the queued one."), 60)
    t.wait_for(lambda ls: count_turn_durations(ls) >= 2, 60)
    return [("reply__queued_while_working", t.transcript_path)]


@sc
def interrupt__mid_stream(m, t):
    t.prompt("SLOW please stream")
    m.wait_streaming(3)
    t.send_keys("Escape")
    t.wait_for(lambda ls: "[Request interrupted by user]" in user_texts(ls))
    return [("interrupt__mid_stream", t.transcript_path)]


@sc
def clear__new_file(m, t):
    t.prompt("hello before clear")
    t.wait_for(turn_ended)
    old = t.transcript_path
    t.send_literal("/clear")
    t.wait_pane(r"Start a new session")
    t.send_keys("Enter")
    newp = t.wait_for(lambda _: next((p for p in t.transcripts() if p != old), None), 30, path=old)
    t.wait_for(lambda ls: any(e.get("subtype") == "local_command" for e in ls), 30, path=newp)
    t.wait_for(lambda ls: any(e.get("type") == "cost-state" for e in ls), 30, path=old)
    t.prompt("hello after clear")
    t.wait_for(turn_ended, 30, path=newp)
    return [("clear__new_file", newp), ("clear__old_file", old)]


PICK = r"Enter to select"


def tr_done(n=1):
    return lambda ls: len(tool_results(ls)) >= n


def ended_or_interrupted(ls):
    return turn_ended(ls) or any("[Request interrupted by user" in t for t in user_texts(ls))


def _ask(t, prompt="ASK1 please"):
    t.prompt(prompt)
    t.wait_pane(PICK, 60, settle=0.5)


@sc
def askuserquestion__single_option(m, t):
    _ask(t)
    t.send_keys("Down")
    t.wait_pane(r"❯ 2\. Green")
    t.send_keys("Enter")
    t.wait_for(tr_done())
    t.wait_for(turn_ended)


@sc
def askuserquestion__digit(m, t):
    _ask(t)
    t.send_keys("3")
    t.wait_for(tr_done())
    t.wait_for(turn_ended)


@sc
def askuserquestion__free_text(m, t):
    _ask(t)
    t.send_keys("Up")
    t.wait_pane(r"❯ 4\.")
    t.send_literal("I prefer purple, really")
    t.wait_pane("purple, really")
    t.send_keys("Enter")
    t.wait_for(tr_done())
    t.wait_for(turn_ended)


@sc
def askuserquestion__decline(m, t):
    _ask(t)
    t.send_keys("Escape")
    t.wait_for(lambda ls: "[Request interrupted by user for tool use]" in user_texts(ls))


@sc
def askuserquestion__decline_empty_free_text(m, t):
    _ask(t)
    t.send_keys("Up")
    t.wait_pane(r"❯ 4\.")
    t.send_keys("Enter")
    t.wait_for(lambda ls: "[Request interrupted by user for tool use]" in user_texts(ls))


@sc
def askuserquestion__chat_about_this(m, t):
    _ask(t)
    t.send_keys("Up")
    t.wait_pane(r"❯ 4\.")
    t.send_keys("Down")
    t.wait_pane(r"❯ 5\. Chat")
    t.send_keys("Enter")
    t.wait_for(tr_done())
    t.wait_for(turn_ended)


@sc
def askuserquestion__two_questions(m, t):
    _ask(t, "ASK2 please")
    t.send_keys("Down")
    t.wait_pane(r"❯ 2\. Banana")
    t.send_keys("Enter")
    t.wait_pane(r"Which drink", 30, settle=0.5)
    t.send_keys("Enter")
    t.wait_pane(r"Review your answers", 30, settle=0.5)
    t.send_keys("Enter")
    t.wait_for(tr_done())
    t.wait_for(turn_ended)


@sc
def askuserquestion__multiselect(m, t):
    _ask(t, "ASKM please")
    t.send_keys("Down", "Down")
    t.wait_pane(r"❯ 3\. \[ \] Olives")
    t.send_keys("Enter")
    t.wait_pane(r"❯ 3\. \[✔\] Olives")
    t.send_keys("Up", "Up")
    t.wait_pane(r"❯ 1\. \[ \] Cheese")
    t.send_keys("Enter")
    t.wait_pane(r"❯ 1\. \[✔\] Cheese")
    t.send_keys(*["Down"] * 5)
    t.wait_pane(r"❯\s*Submit")
    t.send_keys("Enter")
    t.wait_pane(r"Submit answers", 30, settle=0.5)
    t.send_keys("Enter")
    t.wait_for(tr_done())
    t.wait_for(turn_ended)


PLANPICK = r"Would you like to proceed"


def _plan(t, m, prompt="PLAN1 please"):
    t.prompt(prompt)
    t.wait_pane(PLANPICK, 60, settle=0.5)


@sc
def exitplanmode__approve(m, t):
    _plan(t, m)
    t.send_keys("Enter")
    t.wait_for(turn_ended, 60)


@sc
def exitplanmode__approve_manual(m, t):
    _plan(t, m)
    t.send_keys("Down")
    t.wait_pane(r"❯ 2\.")
    t.send_keys("Enter")
    t.wait_for(turn_ended, 60)


@sc
def exitplanmode__reject_feedback(m, t):
    _plan(t, m)
    t.send_keys("Down", "Down")
    t.wait_pane(r"❯ 3\.")
    t.send_literal("Please add a step 4 for tests")
    t.wait_pane("step 4 for tests")
    t.send_keys("Enter")
    t.wait_for(turn_ended, 60)


@sc
def exitplanmode__reject_then_revised(m, t):
    _plan(t, m, "PLANREV please")
    t.send_keys("Down", "Down")
    t.wait_pane(r"❯ 3\.")
    t.send_literal("Please add a step for tests")
    t.wait_pane("step for tests")
    t.send_keys("Enter")
    t.wait_for(lambda ls: len(tool_uses(ls, "ExitPlanMode")) >= 2, 60)
    t.wait_pane(PLANPICK, 60, settle=0.5)
    t.send_keys("Down")
    t.wait_pane(r"❯ 2\.")
    t.send_keys("Enter")
    t.wait_for(turn_ended, 60)


@sc
def exitplanmode__reject(m, t):
    _plan(t, m)
    t.send_keys("Escape")
    t.wait_for(lambda ls: "[Request interrupted by user for tool use]" in user_texts(ls))


@sc
def exitplanmode__no_plan_file_approve(m, t):
    t.prompt("PLANNOFILE please")
    t.wait_pane(r"Exit plan mode\?", 60, settle=0.5)
    t.send_keys("Enter")
    t.wait_for(turn_ended, 60)


@sc
def exitplanmode__no_plan_file_no(m, t):
    t.prompt("PLANNOFILE please")
    t.wait_pane(r"Exit plan mode\?", 60, settle=0.5)
    t.send_keys("Down")
    t.wait_pane(r"❯ 2\. No")
    t.send_keys("Enter")
    t.wait_for(ended_or_interrupted, 60)


@sc
def exitplanmode__approve_with_feedback_btab(m, t):
    _plan(t, m)
    t.send_keys("Down", "Down")
    t.wait_pane(r"❯ 3\.")
    t.send_literal("Approved but also add logging")
    t.wait_pane("add logging")
    t.send_keys("BTab")
    t.wait_for(turn_ended, 60)


def _cmds(wt):
    (wt / ".claude/commands").mkdir(parents=True)
    (wt / ".claude/commands/probe-cmd.md").write_text(
        "---\ndescription: Probe project command description\nargument-hint: <words>\n---\nPlease say PROBECMD with $ARGUMENTS\n"
    )
    (wt / ".claude/skills/probe-skill").mkdir(parents=True)
    (wt / ".claude/skills/probe-skill/SKILL.md").write_text(
        "---\nname: probe-skill\ndescription: Probe project skill description\n---\nWhen invoked, say PROBESKILL.\n"
    )


@sc
def command__project_cmd(m, t):
    t.send_literal("/probe-cmd foo bar")
    t.wait_pane(r"probe-cmd foo bar")
    t.send_keys("Enter")
    t.wait_for(turn_ended, 60)


@sc
def command__skill(m, t):
    t.send_literal("/probe-skill")
    t.wait_pane(r"Probe project skill")
    t.send_keys("Enter")
    t.wait_for(turn_ended, 60)


@sc
def command__context(m, t):
    t.prompt("hello world")
    t.wait_for(turn_ended)
    t.send_literal("/context")
    t.wait_pane(r"Show what fills")
    t.send_keys("Enter")
    t.wait_for(
        lambda ls: any(e.get("isMeta") and "Context Usage" in json.dumps(e.get("message")) for e in ls), 30
    )


@sc
def bash__permission_approve(m, t):
    t.prompt("BASH please")
    t.wait_pane(r"Do you want to proceed", 60, settle=0.5)
    t.send_keys("Enter")
    t.wait_for(tr_done())
    t.wait_for(turn_ended)


@sc
def bash__permission_reject(m, t):
    t.prompt("BASH please")
    t.wait_pane(r"Do you want to proceed", 60, settle=0.5)
    t.send_keys("Escape")
    t.wait_for(lambda ls: "[Request interrupted by user for tool use]" in user_texts(ls))


@sc
def interrupt__tool_running(m, t):
    t.prompt("SLEEPY please")
    t.wait_pane(r"Do you want to proceed", 60, settle=0.5)
    t.send_keys("Enter")
    t.wait_pane(r"esc to interrupt")
    t.wait_pane(r"Running|sleep", 10)
    t.send_keys("Escape")
    t.wait_for(lambda ls: "[Request interrupted by user for tool use]" in user_texts(ls))


AGENT_TASK = "SUBTASK: read README.md and summarize it"


def _has_api_error(ls):
    return any(e.get("isApiErrorMessage") for e in ls)


@sc
def thinking__signed(m, t):
    t.prompt("THINK about it")
    t.wait_for(turn_ended)


@sc
def api_error__overloaded_gave_up(m, t):
    t.prompt("OVERLOADED please")
    t.wait_for(_has_api_error, 120)


# The CLI honours CLAUDE_CODE_MAX_RETRIES (compat §13): a few retries keep these captures fast.
RETRY_ENV = {"api_error__unauthorized_gave_up": "2", "api_error__server_error_gave_up": "3"}


@sc
def api_error__unauthorized_gave_up(m, t):
    t.prompt("UNAUTHORIZED please")
    t.wait_for(_has_api_error, 120)


@sc
def api_error__server_error_gave_up(m, t):
    t.prompt("BROKEN please")
    t.wait_for(_has_api_error, 120)


@sc
def usage_limit__reached(m, t):
    t.prompt("LIMITED please")
    t.wait_for(_has_api_error, 120)


@sc
def api_error__retried_then_replied(m, t):
    t.prompt("FLAKY please")
    t.wait_for(turn_ended, 120)


@sc
def compact__manual(m, t):
    t.prompt("hello world")
    t.wait_for(turn_ended)
    t.send_literal("/compact")
    t.wait_pane(r"/compact", 10, settle=0.5)
    t.send_keys("Enter")
    t.wait_for(lambda ls: any(e.get("isCompactSummary") for e in ls), 120)
    t.wait_for(lambda ls: any("Compacted" in u for u in user_texts(ls)), 30)
    t.prompt("first prompt after compaction")
    t.wait_for(lambda ls: count_turn_durations(ls) >= 2)


@sc
def compact__auto(m, t):
    t.prompt("FILLCONTEXT please")
    t.wait_for(turn_ended)
    t.prompt("first prompt after the context filled")
    t.wait_for(lambda ls: any(e.get("isCompactSummary") for e in ls), 120)
    t.wait_for(lambda ls: count_turn_durations(ls) >= 2)


@sc
def agent__background(m, t):
    t.prompt("AGENT please")
    t.wait_for(has_assistant_text("The background agent finished."), 120)
    t.wait_for(lambda ls: count_turn_durations(ls) >= 2)
    sub = next(t.project_dir.glob(f"{t.session_id}/subagents/agent-*.jsonl"))
    return [("agent__background", t.transcript_path), ("agent__background_subagent", sub)]


def _bash_mode(t, command):
    """Bash mode typed in the TUI itself: "!" switches the composer, then the command."""
    t.send_literal("!")
    t.wait_pane(r"bash mode|! ", 10, settle=0.3)
    t.send_literal(command)
    t.wait_pane(re.escape(command), 10, settle=0.3)
    t.send_keys("Enter")


@sc
def bash_mode__typed(m, t):
    _bash_mode(t, "ls")
    t.wait_for(turn_ended, 30)
    _bash_mode(t, "ls no-such-file")
    t.wait_for(lambda ls: count_turn_durations(ls) >= 2, 30)


@sc
def mention__file(m, t):
    # An @-mention typed in the composer: the CLI reads the file itself and records it as an
    # attachment entry beside the prompt.
    t.send_literal("what is in @README.md")
    t.wait_pane(r"@README\.md", 10, settle=1.0)
    t.send_keys("Escape")  # close the file completion, keep the text
    t.send_literal(" ")
    t.send_keys("Enter")
    t.wait_for(turn_ended, 30)


def _png(wt):
    # The smallest valid PNG (1x1, one red pixel), so the CLI attaches it as an image.
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")
    (wt / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + body)


@sc
def image__pasted_path(m, t):
    t.send_paste(str(t.cwd / "shot.png"))
    t.wait_pane(r"\[Image #1\]", 10, settle=0.5)
    t.send_literal(" describe it")
    t.send_keys("Enter")
    t.wait_for(turn_ended, 30)


def _hook(event, message=None, fail=None):
    if fail:
        command = f"echo '{fail}' >&2; exit 1"
    else:
        command = f'echo \'{{"systemMessage": "{message}"}}\''
    return {"type": "command", "command": command}


HOOK_SETTINGS = {
    "hooks": {
        "UserPromptSubmit": [{"hooks": [_hook("UserPromptSubmit", "Prompt logged by the probe hook")]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [_hook("PreToolUse", "Checked by the probe hook")]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [_hook("PostToolUse", fail="probe lint failed")]}],
    },
    "permissions": {"allow": ["Bash(touch:*)"]},
}


@sc
def hook__messages(m, t):
    t.prompt("BASH please")
    t.wait_for(turn_ended, 60)


def SCRIPT():
    return Script(
        when("THINK", thinking("Let me weigh the options.\n\nOption A is simpler.", "I pick option A.")),
        when("OVERLOADED", api_error(529, "overloaded_error", "Overloaded")),
        when("UNAUTHORIZED", api_error(401, "authentication_error", "invalid x-api-key")),
        when("BROKEN", api_error(500, "api_error", "Internal server error")),
        when("LIMITED", usage_limit(resets_in_s=3600)),
        when("FILLCONTEXT", context_full("A very long answer.")),
        when(
            "FLAKY", errors_then(2, api_error(500, "api_error", "Internal server error"), text("Recovered."))
        ),
        when(
            "AGENT",
            tool_use(
                "Agent",
                {"description": "Read the readme", "prompt": AGENT_TASK, "subagent_type": "general-purpose"},
            ),
            text("Started a background agent."),
        ),
        when("SLOWFIRST", slow_text(10, 0.5)),
        when("queued", text("Got the queued one.")),
        when("SLOW", slow_text(20, 1.0)),
        when("hello world", text("Hello from the scripted model.")),
        when("first prompt", text("Reply to the first prompt.")),
        when("PASTE", text("Got your multi-line paste.")),
        when("short single", text("Got the short paste.")),
        when("ASK1", ask_user_question(), text("Thanks for answering.")),
        when(
            "ASK2",
            ask_user_question(
                questions=[
                    {
                        "question": "Which fruit do you want?",
                        "header": "Fruit",
                        "multiSelect": False,
                        "options": [
                            {"label": "Apple", "description": "Crunchy"},
                            {"label": "Banana", "description": "Soft"},
                        ],
                    },
                    {
                        "question": "Which drink do you want?",
                        "header": "Drink",
                        "multiSelect": False,
                        "options": [
                            {"label": "Tea", "description": "Hot"},
                            {"label": "Coffee", "description": "Strong"},
                        ],
                    },
                ]
            ),
            text("Thanks for answering both."),
        ),
        when(
            "ASKM",
            ask_user_question(
                "Which toppings do you want?",
                "Toppings",
                [("Cheese", "Mozzarella"), ("Ham", "Smoked"), ("Olives", "Black"), ("Onion", "Red")],
                multi_select=True,
            ),
            text("Thanks, toppings noted."),
        ),
        when(
            "PLANREV",
            tool_use("ToolSearch", {"query": "select:ExitPlanMode", "max_results": 1}),
            write_plan("# Plan\n\n1. Create hello.txt\n"),
            tool_use("ExitPlanMode", {}, text="Here is my plan."),
            write_plan("# Plan, revised\n\n1. Create hello.txt\n2. Test it\n"),
            tool_use("ExitPlanMode", {}, text="Here is the revised plan."),
            text("Revised plan approved."),
        ),
        when("PLANNOFILE", plan_turns("# Plan\n\n1. a\n", write_file=False, after="Done.")),
        when(
            "PLAN1",
            plan_turns(
                "# Plan\n\n1. Create hello.txt\n2. Write hello into it\n3. Done\n", after="Understood."
            ),
        ),
        when(
            "BASH",
            tool_use(
                "Bash",
                {"command": "touch made-by-bash.txt", "description": "Create a file"},
                text="Running a command.",
            ),
            text("Command done."),
        ),
        when(
            "SLEEPY",
            tool_use(
                "Bash", {"command": 'python3 -c "import time; time.sleep(30)"', "description": "Sleep 30s"}
            ),
            text("Slept."),
        ),
        when("PROBECMD", text("PROBECMD foo bar")),
        when("PROBESKILL", text("PROBESKILL")),
        default="ok",
        agents={
            AGENT_TASK: [
                tool_use("Read", {"file_path": "README.md"}, text="Reading the README."),
                text("Subagent summary: the README says hi."),
            ]
        },
        on_notification=text("The background agent finished."),
    )


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m compat.claude_code.capture_fixtures")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("scenarios", nargs="*")
    a = p.parse_args(argv)
    names = a.scenarios or list(SC)
    failed = []
    for n in names:
        extra = ("--permission-mode", "plan") if n.startswith("exitplan") else ("--permission-mode", "manual")
        prep = _cmds if n.startswith("command") else _png if n.startswith("image") else None
        settings = HOOK_SETTINGS if n.startswith("hook") else None
        env = {"CLAUDE_CODE_MAX_RETRIES": RETRY_ENV[n]} if n in RETRY_ENV else None
        base, m, t = setup(n, SCRIPT(), extra, settings=settings, prep=prep, env=env)
        try:
            t0 = time.monotonic()
            outs = SC[n](m, t)
            print(f"[{n}] done in {time.monotonic() - t0:.2f}s")
            time.sleep(0.3)  # let the CLI finish appending bookkeeping lines
            if outs:
                for name, path in outs:
                    save(name, path, t.home, t.cwd, a.out)
            else:
                for path in t.transcripts():
                    save(
                        n if path == t.transcript_path else n + "__" + path.stem[:8],
                        path,
                        t.home,
                        t.cwd,
                        a.out,
                    )
        except Exception as ex:
            failed.append(n)
            print("FAILED", n, type(ex).__name__, ex)
        finally:
            t.kill()
            m.stop()
            shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
