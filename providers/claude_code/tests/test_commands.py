"""The Claude Code command catalog: pinned tables, the merge, precedence, frontmatter (compat §10).

The live twin is compat/claude_code/tests/test_live_commands.py: every rule here was observed there first.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from providers.claude_code.commands import (
    BUILTINS,
    BUNDLED,
    COMMAND_FALLBACK,
    SKILL_FALLBACK,
    command_catalog,
    parse_frontmatter,
    split_frontmatter,
)
from providers.schema import CommandRole, CommandSpec
from providers.testing import returns_within


@pytest.fixture
def wt(tmp_path: Path) -> Path:
    path = tmp_path / "wt"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def by_name(rows: list[CommandSpec]) -> dict[str, CommandSpec]:
    return {row.name: row for row in rows}


def custom(rows: list[CommandSpec]) -> list[CommandSpec]:
    return [row for row in rows if row.source != "builtin"]


def one(wt: Path, home: Path, rel: str, text: str) -> CommandSpec:
    write(wt, rel, text)
    (row,) = custom(command_catalog(wt, home=home))
    return row


# --- the pinned tables -------------------------------------------------------------------------


def test_it_pins_59_builtins_and_21_bundled_skills_alphabetically():
    names = [p.name for p in BUILTINS]
    bundled = [p.name for p in BUNDLED]
    assert (len(names), len(bundled)) == (59, 21)  # compat §9: the list wraps after 80 + customs
    assert names == sorted(names)
    assert bundled == sorted(bundled)
    assert len(set(names) | set(bundled)) == 80


def test_it_marks_exactly_one_builtin_clear_and_it_is_chat_safe():
    clears = [p for p in (*BUILTINS, *BUNDLED) if p.role is CommandRole.CLEAR]
    assert [p.name for p in clears] == ["clear"]
    assert clears[0].chat_safe


def test_it_gives_every_row_a_reason_and_unsafe_rows_carry_it():
    for pinned in (*BUILTINS, *BUNDLED):
        assert pinned.why, pinned.name
        spec = pinned.spec()
        assert spec.reason == ("" if pinned.chat_safe else pinned.why)


@pytest.mark.parametrize(
    "name",
    [
        "config",
        "status",
        "usage",
        "model",
        "resume",
        "rewind",
        "login",
        "logout",
        "theme",
        "permissions",
        "hooks",
        "mcp",
        "memory",
        "export",
        "tasks",
        "plugin",
        "ide",
        "diff",
        "help",
        "exit",
        "cd",
        "background",
        "fork",
        "branch",
        "btw",
        "terminal-setup",
        "tui",
        "keybindings",
        "effort",
        "sandbox",
        "add-dir",
    ],
)
def test_it_keeps_pickers_dialogs_and_session_fights_out_of_the_chat(name: str):
    assert not by_name(command_catalog(Path("/nonexistent"), home=Path("/nonexistent")))[name].chat_safe


@pytest.mark.parametrize("name", ["clear", "compact", "context", "recap", "rename", "init", "code-review"])
def test_it_lets_transcript_writing_commands_and_prompts_through(name: str):
    assert by_name(command_catalog(Path("/nonexistent"), home=Path("/nonexistent")))[name].chat_safe


def test_it_pins_state_free_text_for_the_dynamic_descriptions():
    rows = {p.name: p for p in BUILTINS}
    assert rows["model"].description == "Switch model"
    assert rows["fast"].description == "Toggle fast mode"
    assert all(rows[n].tui_pattern for n in ("model", "fast", "sandbox"))
    assert [p.name for p in (*BUILTINS, *BUNDLED) if p.tui_pattern] == ["fast", "model", "sandbox"]


# --- the merge ---------------------------------------------------------------------------------


def test_it_lists_builtins_then_custom_then_bundled(wt: Path, home: Path):
    write(wt, ".claude/commands/probe-cmd.md", "---\ndescription: Probe\n---\nbody\n")
    rows = command_catalog(wt, home=home)
    names = [r.name for r in rows]
    assert names[:59] == [p.name for p in BUILTINS]
    assert names[59] == "probe-cmd"
    assert names[60:] == [p.name for p in BUNDLED]


def test_an_empty_worktree_gets_only_the_pinned_rows(wt: Path, home: Path):
    rows = command_catalog(wt, home=home)
    assert [r.name for r in rows] == [p.name for p in (*BUILTINS, *BUNDLED)]
    assert {r.source for r in rows} == {"builtin"}


def test_a_project_command_carries_description_and_argument_hint(wt: Path, home: Path):
    row = one(
        wt,
        home,
        ".claude/commands/probe-cmd.md",
        "---\ndescription: Probe project command description\nargument-hint: [file] [mode]\n---\nSay it\n",
    )
    assert row == CommandSpec(
        name="probe-cmd",
        description="Probe project command description",
        argument_hint="[file] [mode]",
        source="project",
        chat_safe=True,
    )


@pytest.mark.parametrize(
    ("rel", "name"),
    [
        ("frontend/lint.md", "frontend:lint"),  # compat §10: folders join with ":"
        ("a/b/deep.md", "a:b:deep"),
        ("Upper_Case.md", "Upper_Case"),
        (".hidden.md", ".hidden"),  # compat §10: dot-files are read too
    ],
)
def test_it_names_commands_from_their_path(wt: Path, home: Path, rel: str, name: str):
    assert one(wt, home, f".claude/commands/{rel}", "---\ndescription: d\n---\n").name == name


def test_it_drops_names_with_spaces_which_cannot_be_typed(wt: Path, home: Path):
    # compat §10: "/Sub Dir:space name" is listed, but typing it gives "Unknown command: /Sub".
    write(wt, ".claude/commands/Sub Dir/space name.md", "---\ndescription: spaces\n---\n")
    write(wt, ".claude/skills/two words/SKILL.md", "---\ndescription: spaces\n---\n")
    assert custom(command_catalog(wt, home=home)) == []


def test_it_ignores_files_that_are_not_markdown(wt: Path, home: Path):
    write(wt, ".claude/commands/notes.txt", "not a command\n")
    write(wt, ".claude/commands/README.MD.bak", "nope\n")
    assert custom(command_catalog(wt, home=home)) == []


def test_a_folder_with_a_skill_md_in_commands_is_one_command(wt: Path, home: Path):
    write(wt, ".claude/commands/pack/SKILL.md", "---\ndescription: skill inside commands dir\n---\nX\n")
    write(wt, ".claude/commands/pack/other.md", "---\ndescription: sibling\n---\nX\n")
    rows = custom(command_catalog(wt, home=home))
    assert [(r.name, r.description) for r in rows] == [("pack", "skill inside commands dir")]


def test_a_skill_is_named_by_its_folder(wt: Path, home: Path):
    # compat §10: the menu shows the frontmatter name, but only the folder name runs.
    row = one(
        wt, home, ".claude/skills/dirname/SKILL.md", "---\nname: other-name\ndescription: differs\n---\nX\n"
    )
    assert (row.name, row.description, row.source) == ("dirname", "differs", "project")


def test_a_skill_without_frontmatter_uses_its_first_line(wt: Path, home: Path):
    row = one(wt, home, ".claude/skills/plain/SKILL.md", "No frontmatter skill body\n")
    assert (row.name, row.description) == ("plain", "No frontmatter skill body")


def test_an_empty_skill_falls_back_to_skill(wt: Path, home: Path):
    assert one(wt, home, ".claude/skills/e/SKILL.md", "---\nname: e\n---\n").description == SKILL_FALLBACK


def test_it_reads_only_skill_md_one_level_down(wt: Path, home: Path):
    write(wt, ".claude/skills/group/inner/SKILL.md", "---\ndescription: nested\n---\n")
    write(wt, ".claude/skills/lower/skill.md", "---\ndescription: lowercase\n---\n")
    write(wt, ".claude/skills/SKILL.md", "---\ndescription: loose\n---\n")
    assert custom(command_catalog(wt, home=home)) == []


@pytest.mark.parametrize(
    ("value", "offered"),
    [
        ("false", False),
        ("true", True),
        ("yes", True),
        ("On", True),
        ("1", True),
        ("maybe", False),
        ("", False),
        ("no", False),
    ],
)
def test_user_invocable_hides_commands_and_skills(wt: Path, home: Path, value: str, offered: bool):
    write(wt, ".claude/skills/s/SKILL.md", f"---\ndescription: s\nuser-invocable: {value}\n---\n")
    write(wt, ".claude/commands/c.md", f"---\ndescription: c\nuser-invocable: {value}\n---\n")
    names = [r.name for r in custom(command_catalog(wt, home=home))]
    assert names == (["c", "s"] if offered else [])


def test_user_rows_come_before_project_rows_each_sorted_without_case(wt: Path, home: Path):
    for rel in ("zeta.md", "Alpha.md", "beta/x.md"):
        write(wt, f".claude/commands/{rel}", "---\ndescription: p\n---\n")
    write(home, ".claude/commands/yak.md", "---\ndescription: u\n---\n")
    write(home, ".claude/skills/apple/SKILL.md", "---\ndescription: u\n---\n")
    rows = custom(command_catalog(wt, home=home))
    assert [(r.name, r.source) for r in rows] == [
        ("apple", "user"),
        ("yak", "user"),
        ("Alpha", "project"),
        ("beta:x", "project"),
        ("zeta", "project"),
    ]


def test_skills_sort_by_the_name_the_menu_shows(wt: Path, home: Path):
    write(wt, ".claude/skills/aaa/SKILL.md", "---\nname: zzz\ndescription: shown as zzz\n---\n")
    write(wt, ".claude/commands/mmm.md", "---\ndescription: m\n---\n")
    assert [r.name for r in custom(command_catalog(wt, home=home))] == ["mmm", "aaa"]


# --- precedence (compat §10: user skills > project skills > user commands > project commands) ----


def test_a_user_command_beats_a_project_command(wt: Path, home: Path):
    write(wt, ".claude/commands/pu.md", "---\ndescription: Project pu\n---\n")
    write(home, ".claude/commands/pu.md", "---\ndescription: User pu\n---\n")
    assert [(r.description, r.source) for r in custom(command_catalog(wt, home=home))] == [
        ("User pu", "user")
    ]


def test_a_skill_beats_a_command_of_either_level(wt: Path, home: Path):
    write(wt, ".claude/commands/dup.md", "---\ndescription: Project cmd\n---\n")
    write(home, ".claude/commands/dup.md", "---\ndescription: User cmd\n---\n")
    write(wt, ".claude/skills/dup/SKILL.md", "---\ndescription: Project skill\n---\n")
    assert [r.description for r in custom(command_catalog(wt, home=home))] == ["Project skill"]


def test_a_user_skill_beats_a_project_skill(wt: Path, home: Path):
    write(wt, ".claude/skills/probe-skill/SKILL.md", "---\ndescription: Project copy\n---\n")
    write(home, ".claude/skills/probe-skill/SKILL.md", "---\ndescription: User copy\n---\n")
    assert [(r.description, r.source) for r in custom(command_catalog(wt, home=home))] == [
        ("User copy", "user")
    ]


def test_a_hidden_skill_does_not_shadow_a_command(wt: Path, home: Path):
    write(wt, ".claude/skills/x/SKILL.md", "---\ndescription: hidden\nuser-invocable: false\n---\n")
    write(wt, ".claude/commands/x.md", "---\ndescription: the command\n---\n")
    assert [r.description for r in custom(command_catalog(wt, home=home))] == ["the command"]


def test_a_custom_command_replaces_the_builtin_it_shadows(wt: Path, home: Path):
    # compat §10: the TUI lists both /help rows, but typing /help runs the project command.
    write(wt, ".claude/commands/help.md", "---\ndescription: Project help override\n---\n")
    write(home, ".claude/commands/init.md", "---\ndescription: User init\n---\n")
    rows = command_catalog(wt, home=home)
    assert [r.name for r in rows].count("help") == 1
    assert by_name(rows)["help"] == CommandSpec(
        name="help", description="Project help override", source="project", chat_safe=True
    )
    assert by_name(rows)["init"].source == "user"
    assert len(rows) == len({r.name for r in rows}) == 80


def test_shadowing_clear_moves_the_clear_role_to_reset(wt: Path, home: Path):
    # compat §10: with .claude/commands/clear.md, /reset still runs the builtin clear.
    write(wt, ".claude/commands/clear.md", "---\ndescription: Project clear\n---\n")
    rows = command_catalog(wt, home=home)
    clears = [r for r in rows if r.role is CommandRole.CLEAR]
    assert [(r.name, r.chat_safe) for r in clears] == [("reset", True)]
    assert by_name(rows)["clear"].role is None


def test_shadowing_clear_and_reset_falls_to_new_then_to_nothing(wt: Path, home: Path):
    write(wt, ".claude/commands/clear.md", "c\n")
    write(wt, ".claude/commands/reset.md", "r\n")
    assert [r.name for r in command_catalog(wt, home=home) if r.role] == ["new"]
    write(home, ".claude/skills/new/SKILL.md", "n\n")
    assert [r.name for r in command_catalog(wt, home=home) if r.role] == []


def test_names_are_unique_whatever_collides(wt: Path, home: Path):
    for root in (wt, home):
        for name in ("help", "clear", "reset", "dup", "init"):
            write(root, f".claude/commands/{name}.md", "x\n")
            write(root, f".claude/skills/{name}/SKILL.md", "x\n")
    rows = command_catalog(wt, home=home)
    assert len(rows) == len({r.name for r in rows})
    assert sum(r.role is CommandRole.CLEAR for r in rows) <= 1


def test_a_worktree_that_is_home_lists_each_file_once(home: Path):
    write(home, ".claude/commands/same.md", "---\ndescription: once\n---\n")
    assert [(r.name, r.source) for r in custom(command_catalog(home, home=home))] == [("same", "user")]


# --- descriptions and frontmatter (each case seen in the real TUI, compat §10) ---------------------


@pytest.mark.parametrize(
    ("text", "description", "hint"),
    [
        pytest.param("First body line here\nsecond line\n", "First body line here", "", id="no-frontmatter"),
        pytest.param(
            "---\nargument-hint: <x>\n---\n\n# Heading line\nbody\n", "Heading line", "<x>", id="heading"
        ),
        pytest.param("", COMMAND_FALLBACK, "", id="empty-file"),
        pytest.param("---\nargument-hint: <y>\n---\n", COMMAND_FALLBACK, "<y>", id="only-frontmatter"),
        pytest.param(
            "---\ndescription: \"Quoted: with colon\"\nargument-hint: '<a> <b>'\n---\nQ\n",
            "Quoted: with colon",
            "<a> <b>",
            id="quotes",
        ),
        pytest.param(
            "---\ndescription: 'It''s single'\n---\nX\n", "It's single", "", id="single-quote-escape"
        ),
        pytest.param("---\ndescription: [unclosed\n---\nbody\n", "[unclosed", "", id="broken-flow-requoted"),
        pytest.param("---\ndescription: never closed\nbody\n", "---", "", id="unclosed-fence"),
        pytest.param(
            "---\ndescription: >\n  folded line one\n  folded line two\n---\nX\n",
            "folded line one folded line two",
            "",
            id="folded",
        ),
        pytest.param(
            "---\ndescription: Listy\nallowed-tools:\n  - Bash\n  - Read\nargument-hint: [a]\n---\nX\n",
            "Listy",
            "a",
            id="block-list-and-flow-hint",
        ),
        pytest.param("---\ndescription: Has # hash  # and comment\n---\nX\n", "Has", "", id="comment"),
        pytest.param("---\r\ndescription: CRLF desc\r\n---\r\nX\r\n", "CRLF desc", "", id="crlf"),
        pytest.param("\ufeff---\ndescription: BOM desc\n---\nX\n", "BOM desc", "", id="bom"),
        pytest.param(
            "---\ndescription: first\ndescription: second\n---\nX\n", "second", "", id="duplicate-key"
        ),
        pytest.param(
            "---\ndescription: tabbed\nallowed-tools:\n\t- Bash\n---\nX\n", "tabbed", "", id="tab-indent"
        ),
        pytest.param("---\ndescription: 123\n---\nX\n", "123", "", id="number"),
        pytest.param("---\ndescription: true\n---\nX\n", "true", "", id="boolean"),
        pytest.param(
            '---\ndescription: "abc\n---\nUnterm body\n', "Unterm body", "", id="unterminated-quote"
        ),
        pytest.param(
            "---\ndescription: ok\n  bad: indent\nfoo\n---\nBadindent body\n",
            "Badindent body",
            "",
            id="bad-indent",
        ),
        pytest.param("---\ndescription: a---b\n---\nMidline body\n", "a", "", id="fence-mid-line"),
        pytest.param(
            "---\ndescription: key: value inside\n---\nX\n", "key: value inside", "", id="colon-requoted"
        ),
        pytest.param("---\ndescription: ~\n---\nNullish body\n", "Nullish body", "", id="null"),
        pytest.param(
            '---\ndescription: ""\n---\n\nEmpty desc body line\n',
            "Empty desc body line",
            "",
            id="empty-string",
        ),
        pytest.param(
            "---\ndescription:\n  - a list\n---\nList body\n", "List body", "", id="list-description"
        ),
        pytest.param(
            "---\nname: renamed\ndescription: has a name key\n---\nX\n",
            "has a name key",
            "",
            id="name-key-ignored-for-commands",
        ),
        pytest.param("---\ndescription: d\nargument-hint: [a, b]\n---\n", "d", "a,b", id="flow-list-hint"),
        pytest.param("---\ndescription: d\nargument-hint: 7\n---\n", "d", "7", id="number-hint"),
        pytest.param('---\ndescription: "tab\\there \\u00e9"\n---\n', "tab\there é", "", id="escapes"),
        pytest.param(
            "---\ndescription: |\n  line one\n  line two\n---\n", "line one\nline two", "", id="literal"
        ),
        pytest.param(
            "---\ndescription: plain\n  continued here\n---\n",
            "plain continued here",
            "",
            id="plain-continuation",
        ),
        pytest.param(
            "---\nhooks:\n  Stop:\n    - command: x\ndescription: nested ok\n---\n",
            "nested ok",
            "",
            id="nested-mapping",
        ),
        pytest.param("---\n- just\n- a list\n---\nTop list body\n", "Top list body", "", id="top-level-list"),
        pytest.param("---\n\x00\x01garbage: [\n---\nGarbage body\n", "Garbage body", "", id="garbage"),
    ],
)
def test_it_reads_descriptions_as_the_cli_does(wt: Path, home: Path, text: str, description: str, hint: str):
    row = one(wt, home, ".claude/commands/c.md", text)
    assert (row.description, row.argument_hint) == (description, hint)


def test_a_long_first_line_is_cut_to_97_characters_and_dots(wt: Path, home: Path):
    line = "A very long first line " + "and on " * 30
    row = one(wt, home, ".claude/commands/long.md", line + "\n")
    assert row.description == line.strip()[:97] + "..."
    assert len(row.description) == 100


def test_a_long_frontmatter_description_is_kept_whole(wt: Path, home: Path):
    text = "word " * 60
    assert (
        one(wt, home, ".claude/commands/c.md", f"---\ndescription: {text}\n---\n").description == text.strip()
    )


def test_an_unreadable_command_is_skipped(wt: Path, home: Path):
    (wt / ".claude/commands").mkdir(parents=True)
    (wt / ".claude/commands/broken.md").symlink_to(wt / "nowhere")
    write(wt, ".claude/commands/fine.md", "fine\n")
    assert [r.name for r in custom(command_catalog(wt, home=home))] == ["fine"]


def test_non_utf8_bytes_do_not_crash(wt: Path, home: Path):
    path = wt / ".claude/commands/bin.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\ndescription: caf\xe9\n---\n\xff\xfe")
    assert one_existing(wt, home).description == "caf\ufffd"


def one_existing(wt: Path, home: Path) -> CommandSpec:
    (row,) = custom(command_catalog(wt, home=home))
    return row


def test_random_frontmatter_never_raises():
    rng = random.Random(6)
    alphabet = "ab: -#'\"[]{}|>\n\t\\,&*!%@`~0123.\r"
    for _ in range(3000):
        block = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        assert isinstance(parse_frontmatter(block), dict)


def test_split_frontmatter_needs_a_second_fence():
    assert split_frontmatter("---\na: b\n") == (None, "---\na: b\n")
    assert split_frontmatter("---\na: b\n---\nbody") == ("a: b\n", "body")
    assert split_frontmatter("no fence\n---\n") == (None, "no fence\n---\n")


def test_a_fifo_or_device_among_the_commands_is_skipped_not_waited_on(wt: Path, home: Path):
    (wt / ".claude/commands").mkdir(parents=True)
    os.mkfifo(wt / ".claude/commands/stall.md")
    os.symlink("/dev/zero", wt / ".claude/commands/zero.md")
    write(wt, ".claude/commands/fine.md", "---\ndescription: Fine\n---\n")
    rows = returns_within(lambda: custom(command_catalog(wt, home=home)))
    assert [r.name for r in rows] == ["fine"]


def test_exit_is_refused_under_its_alias_quit_too(wt: Path, home: Path):
    # compat §10: typing /quit exits the CLI like /exit; the menu lists only /exit.
    exit_row = by_name(command_catalog(wt, home=home))["exit"]
    assert (exit_row.chat_safe, exit_row.aliases) == (False, ("quit",))


def test_a_custom_command_named_like_an_alias_takes_it_from_the_builtin(wt: Path, home: Path):
    write(wt, ".claude/commands/quit.md", "---\ndescription: Project quit\n---\n")
    rows = by_name(command_catalog(wt, home=home))
    assert rows["exit"].aliases == () and rows["quit"].chat_safe
