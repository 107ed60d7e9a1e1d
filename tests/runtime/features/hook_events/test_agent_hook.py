"""Claude Code's hook events fired by every agent of the tree, with real shell scripts as hooks."""

from __future__ import annotations

from pathlib import Path

from nestor.api import ServerReply, ServerToolCall
from tests.runtime.features.hook_events.support import Project, hooks_toml, script, tool_results, user_texts

EVERY_EVENT = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
)


async def test_every_event_reaches_one_hook_from_the_main_agent_and_its_sub_agent(tmp_path: Path) -> None:
    project = Project(tmp_path)
    recorder = project.recorder()
    project.user_config = hooks_toml({event: [(None, recorder)] for event in EVERY_EVENT})
    (project.folder).mkdir(parents=True)
    (project.folder / "a.txt").write_text("hello\n", encoding="utf-8")
    task = {"description": "look", "prompt": "read a.txt", "subagent_type": "explore"}
    outcome, _requests = await project.run(
        [
            ServerReply(tool_calls=(ServerToolCall("task", task),)),
            ServerReply(
                tool_calls=(
                    ServerToolCall("view", {"path": "a.txt"}),
                    ServerToolCall("view", {"path": "nope.txt"}),
                )
            ),
            ServerReply(text="It says hello."),
            ServerReply(text="a.txt says hello."),
        ],
        prompt="what is in a.txt?",
    )
    assert outcome.text == "a.txt says hello."
    events = project.events()
    names = [event["hook_event_name"] for event in events]
    assert names[:2] == ["SessionStart", "UserPromptSubmit"] and names[-1] == "SessionEnd"
    main_id = events[0]["agent_id"]
    by_name = {event["hook_event_name"]: event for event in events}
    prompts = [(e["depth"], e["prompt"]) for e in events if e["hook_event_name"] == "UserPromptSubmit"]
    assert prompts == [(0, "what is in a.txt?"), (1, "read a.txt")]  # a sub-agent's task prompt too
    assert by_name["SessionStart"]["source"] == "startup" and by_name["SessionStart"]["depth"] == 0
    task_call = next(e for e in events if e["hook_event_name"] == "PreToolUse" and e["tool_name"] == "Agent")
    assert task_call["agent_id"] == main_id and task_call["tool_input"]["subagent_type"] == "explore"
    child = by_name["SubagentStart"]
    assert child["agent_type"] == "explore" and child["parent_agent_id"] == main_id and child["depth"] == 1
    assert child["session_id"] == main_id  # one session id for the whole tree, as Claude Code's
    read = next(e for e in events if e["hook_event_name"] == "PostToolUse" and e["tool_name"] == "Read")
    assert read["nestor_tool_name"] == "view"
    assert read["agent_id"] == child["agent_id"] and read["agent_type"] == "explore"
    assert read["tool_input"]["file_path"] == str(project.folder / "a.txt")
    assert "hello" in read["tool_response"]["content"] and read["tool_use_id"]
    failed = by_name["PostToolUseFailure"]
    assert failed["tool_input"]["file_path"].endswith("nope.txt") and failed["error"]
    assert by_name["SubagentStop"]["agent_id"] == child["agent_id"]
    assert by_name["SubagentStop"]["stop_hook_active"] is False
    assert (
        by_name["Stop"]["agent_id"] == main_id
        and by_name["Stop"]["last_assistant_message"] == "a.txt says hello."
    )
    assert all(event["cwd"] == str(project.folder) for event in events)
    assert names.index("SubagentStop") < names.index("Stop")


BLOCK_RM = """#!/bin/sh
command=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"].get("command", ""))')
case "$command" in
  rm*) echo "rm is not allowed here" >&2; exit 2 ;;
esac
exit 0
"""


async def test_a_pre_tool_use_hook_blocks_rm_in_the_main_agent_and_in_a_sub_agent(tmp_path: Path) -> None:
    project = Project(tmp_path)
    guard = script(tmp_path / "bin", "guard.sh", BLOCK_RM)
    project.user_config = hooks_toml({"PreToolUse": [("Bash", str(guard))]})
    project.folder.mkdir(parents=True)
    victim = project.folder / "keep.txt"
    victim.write_text("keep", encoding="utf-8")
    task = {"description": "clean", "prompt": "remove keep.txt", "subagent_type": "general"}
    outcome, requests = await project.run(
        [
            ServerReply(tool_calls=(ServerToolCall("bash", {"command": "rm keep.txt"}),)),
            ServerReply(tool_calls=(ServerToolCall("task", task),)),
            ServerReply(tool_calls=(ServerToolCall("bash", {"command": "rm -f keep.txt"}),)),
            ServerReply(text="Could not remove it."),
            ServerReply(text="Not removed."),
        ],
        yolo=True,
    )
    assert victim.read_text(encoding="utf-8") == "keep"
    assert "Blocked by a hook: rm is not allowed here" in tool_results(requests[1])[0]
    assert "Blocked by a hook: rm is not allowed here" in tool_results(requests[3])[0]  # the sub-agent's
    assert outcome.text == "Not removed."


REWRITE = """#!/bin/sh
cat > /dev/null
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",'\
' "updatedInput": {"command": "echo rewritten"}}}'
"""


async def test_updated_input_rewrites_a_command_and_an_allow_skips_the_question(tmp_path: Path) -> None:
    project = Project(tmp_path)
    rewrite = script(tmp_path / "bin", "rewrite.sh", REWRITE)
    project.user_config = hooks_toml({"PreToolUse": [("bash", str(rewrite))]})
    outcome, requests = await project.run(
        [
            ServerReply(tool_calls=(ServerToolCall("bash", {"command": "echo original"}),)),
            ServerReply(text="ok"),
        ]
    )
    assert outcome.text == "ok"
    result = tool_results(requests[1])[0]
    assert "rewritten" in result and "original" not in result  # headless, yet not asked: the hook allowed it


async def test_a_hooks_allow_never_opens_a_deny_rule_and_its_deny_holds_under_yolo(tmp_path: Path) -> None:
    project = Project(tmp_path)
    allow = script(tmp_path / "bin", "allow.sh", REWRITE.replace("echo rewritten", "touch made.txt"))
    deny = script(
        tmp_path / "bin",
        "deny.sh",
        "#!/bin/sh\ncat >/dev/null\n"
        'echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",'
        ' "permissionDecisionReason": "no writes today"}}\'\n',
    )
    project.user_config = hooks_toml({"PreToolUse": [("Bash", str(allow)), ("Write", str(deny))]})
    project.user_config = '[permissions]\ndeny = ["bash(touch *)"]\n\n' + project.user_config
    outcome, requests = await project.run(
        [
            ServerReply(
                tool_calls=(
                    ServerToolCall("bash", {"command": "echo hi"}),
                    ServerToolCall("write", {"path": "w.txt", "content": "x"}),
                )
            ),
            ServerReply(text="done"),
        ],
        yolo=True,
    )
    bash_result, write_result = tool_results(requests[1])
    assert "denied by rule" in bash_result.lower() and not (project.folder / "made.txt").exists()
    assert "Blocked by a hook: no writes today" in write_result and not (project.folder / "w.txt").exists()
    assert outcome.text == "done"


PERMISSION_REWRITE = """#!/bin/sh
if grep -q first ; then command="echo rewritten"; else command="touch made.txt"; fi
echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow",'\\
' "updatedInput": {"command": "'"$command"'"}}}}'
"""

PERMISSION_DENY = """#!/bin/sh
cat >/dev/null
echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny",'\\
' "message": "write through the formatter"}}}'
"""


async def test_a_permission_request_hooks_message_reaches_the_model_and_its_rewrite_runs_within_the_rules(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    rewrite = script(tmp_path / "bin", "rewrite.sh", PERMISSION_REWRITE)
    deny = script(tmp_path / "bin", "deny.sh", PERMISSION_DENY)
    project.user_config = hooks_toml({"PermissionRequest": [("Bash", str(rewrite)), ("Write", str(deny))]})
    project.user_config = '[permissions]\ndeny = ["bash(touch *)"]\n\n' + project.user_config
    outcome, requests = await project.run(
        [
            ServerReply(
                tool_calls=(
                    ServerToolCall("bash", {"command": "echo first"}),
                    ServerToolCall("bash", {"command": "echo second"}),
                    ServerToolCall("write", {"path": "w.txt", "content": "x"}),
                )
            ),
            ServerReply(text="done"),
        ]
    )
    first, second, write = tool_results(requests[1])
    assert "rewritten" in first and "first" not in first  # headless, answered by the hook, rewritten
    assert "denied by rule" in second.lower() and not (project.folder / "made.txt").exists()
    assert "denied by a hook" in write and "write through the formatter" in write
    assert not (project.folder / "w.txt").exists()
    assert outcome.text == "done"


STOP_ONCE = """#!/bin/sh
if grep -q '"stop_hook_active": true' ; then exit 0; fi
echo "run the tests first" >&2
exit 2
"""


async def test_a_stop_hook_makes_the_agent_continue_once(tmp_path: Path) -> None:
    project = Project(tmp_path)
    stop = script(tmp_path / "bin", "stop.sh", STOP_ONCE)
    project.user_config = hooks_toml({"Stop": [(None, str(stop))]})
    outcome, requests = await project.run([ServerReply(text="Done."), ServerReply(text="Tests pass. Done.")])
    assert outcome.text == "Tests pass. Done." and len(requests) == 2
    assert any("run the tests first" in text for text in user_texts(requests[1]))


FORMATTER = """#!/bin/sh
file=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"]["file_path"])')
tr 'a-z' 'A-Z' < "$file" > "$file.tmp" && mv "$file.tmp" "$file"
"""


async def test_a_post_tool_use_formatter_runs_after_each_write(tmp_path: Path) -> None:
    project = Project(tmp_path)
    formatter = script(tmp_path / "bin", "format.sh", FORMATTER)
    project.user_config = hooks_toml({"PostToolUse": [("Edit|Write", str(formatter))]})
    outcome, _requests = await project.run(
        [
            ServerReply(tool_calls=(ServerToolCall("write", {"path": "f.txt", "content": "shout\n"}),)),
            ServerReply(text="ok"),
        ],
        yolo=True,
    )
    assert outcome.text == "ok"
    assert (project.folder / "f.txt").read_text(encoding="utf-8") == "SHOUT\n"


async def test_a_user_prompt_submit_hook_adds_context_or_drops_the_prompt(tmp_path: Path) -> None:
    project = Project(tmp_path)
    context = script(
        tmp_path / "bin", "context.sh", "#!/bin/sh\ncat >/dev/null\necho 'the sprint ends friday'\n"
    )
    project.user_config = hooks_toml({"UserPromptSubmit": [(None, str(context))]})
    outcome, requests = await project.run([ServerReply(text="noted")])
    assert outcome.text == "noted"
    assert any("the sprint ends friday" in text for text in user_texts(requests[0]))

    blocked = Project(tmp_path / "second")
    refuse = script(tmp_path / "bin", "refuse.sh", "#!/bin/sh\necho 'no secrets in prompts' >&2\nexit 2\n")
    blocked.user_config = hooks_toml({"UserPromptSubmit": [(None, str(refuse))]})
    notices: list[str] = []
    outcome, requests = await blocked.run(
        [ServerReply(text="never")], prompt="my password is hunter2", notices=notices
    )
    assert requests == [] and outcome.stop_reason == "hook"
    assert "prompt blocked by a hook: no secrets in prompts" in notices


async def test_continue_false_stops_the_agent_with_its_reason(tmp_path: Path) -> None:
    project = Project(tmp_path)
    halt = script(
        tmp_path / "bin",
        "halt.sh",
        '#!/bin/sh\ncat >/dev/null\necho \'{"continue": false, "stopReason": "quota reached"}\'\n',
    )
    project.user_config = hooks_toml({"PostToolUse": [("*", str(halt))]})
    notices: list[str] = []
    outcome, requests = await project.run(
        [ServerReply(tool_calls=(ServerToolCall("ls", {}),)), ServerReply(text="never asked")],
        notices=notices,
    )
    assert len(requests) == 1 and outcome.stop_reason == "hook"
    assert "stopped by a hook: quota reached" in notices


NO_TITLES_NOR_AUTO_COMPACTION = (
    '[models.small]\nmodel = "local"\n\n[context]\ndisable_auto_compact = true\n\n'
)


async def test_pre_and_post_compact_hooks_see_a_manual_compaction_and_a_block_skips_it(
    tmp_path: Path,
) -> None:
    from nestor.api import App, ScriptedOpenAIServer

    project = Project(tmp_path, context_window=15000)
    recorder = project.recorder()
    hooks = {"PreCompact": [("manual", recorder)], "PostCompact": [(None, recorder)]}
    project.user_config = NO_TITLES_NOR_AUTO_COMPACTION + hooks_toml(hooks)
    long = "word " * 1200
    replies = [
        ServerReply(text=f"first {long}"),
        ServerReply(text=f"second {long}"),
        ServerReply(text="the summary"),
    ]
    with ScriptedOpenAIServer(replies) as server:
        app = App.open(project.settings(server.base_url))
        try:
            conversation = await app.conversation(interactive=False, env={}, first_prompt="one")
            await conversation.run_to_completion(f"one {long}")
            await conversation.run_to_completion(f"two {long}")
            compacted = await conversation.compact("keep the names")
        finally:
            await app.aclose()
    assert compacted is not None
    pre, post = project.events()
    assert (pre["hook_event_name"], pre["trigger"], pre["custom_instructions"]) == (
        "PreCompact",
        "manual",
        "keep the names",
    )
    assert (post["hook_event_name"], post["trigger"], post["compact_summary"]) == (
        "PostCompact",
        "manual",
        "the summary",
    )

    blocked = Project(tmp_path / "blocked", context_window=15000)
    refuse = script(tmp_path / "bin", "no-compact.sh", "#!/bin/sh\necho 'not now' >&2\nexit 2\n")
    blocked.user_config = NO_TITLES_NOR_AUTO_COMPACTION + hooks_toml({"PreCompact": [(None, str(refuse))]})
    with ScriptedOpenAIServer(replies[:2]) as server:
        notices: list[str] = []
        app = App.open(blocked.settings(server.base_url), notify=notices.append)
        try:
            conversation = await app.conversation(interactive=False, env={}, first_prompt="one")
            await conversation.run_to_completion(f"one {long}")
            await conversation.run_to_completion(f"two {long}")
            assert await conversation.compact() is None
        finally:
            await app.aclose()
    assert "compaction skipped by a hook: not now" in notices


BASH_VALIDATOR = """#!/usr/bin/env python3
import json
import re
import sys

VALIDATION_RULES = [
    (r"\\bgrep\\b(?!.*\\|)", "Use 'rg' (ripgrep) instead of 'grep' for better performance and features"),
]

input_data = json.load(sys.stdin)
tool_name = input_data.get("tool_name", "")
if tool_name != "Bash":
    sys.exit(0)
command = input_data.get("tool_input", {}).get("command", "")
issues = [message for pattern, message in VALIDATION_RULES if re.search(pattern, command)]
if issues:
    for message in issues:
        print(f"• {message}", file=sys.stderr)
    sys.exit(2)
"""
VALIDATOR_COMMAND = '"$CLAUDE_PROJECT_DIR"/.claude/hooks/bash_command_validator.py'
FORMAT_COMMAND = "jq -r '.tool_input.file_path' | xargs sed -i 's/  */ /g'"
PROTECT = (
    'python3 -c "import json, sys; data=json.load(sys.stdin); '
    "path=data.get('tool_input', {}).get('file_path', ''); "
    "sys.exit(2 if any(p in path for p in ['.env', 'package-lock.json', '.git/']) else 0)\""
)


async def test_claude_codes_guide_examples_work_unchanged_in_an_approved_project(tmp_path: Path) -> None:
    import json

    from nestor.api import App, ScriptedOpenAIServer

    project = Project(tmp_path)
    hooks_dir = project.folder / ".claude" / "hooks"
    script(hooks_dir, "bash_command_validator.py", BASH_VALIDATOR)
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": VALIDATOR_COMMAND}],
                },
                {"matcher": "Edit|MultiEdit|Write", "hooks": [{"type": "command", "command": PROTECT}]},
            ],
            "PostToolUse": [
                {
                    "matcher": "Edit|MultiEdit|Write",
                    "hooks": [{"type": "command", "command": FORMAT_COMMAND}],
                }
            ],
        }
    }
    (project.folder / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    with ScriptedOpenAIServer([]) as server:
        app = App.open(project.settings(server.base_url))
        try:
            for listed in app.listed_hooks():
                app.hook_approvals().approve(listed.hook)
        finally:
            app.close()
    task = {"description": "edit", "prompt": "tidy", "subagent_type": "general"}
    outcome, requests = await project.run(
        [
            ServerReply(tool_calls=(ServerToolCall("bash", {"command": "grep -r TODO ."}),)),
            ServerReply(tool_calls=(ServerToolCall("task", task),)),
            ServerReply(
                tool_calls=(
                    ServerToolCall("write", {"path": ".env", "content": "KEY=stolen"}),
                    ServerToolCall("write", {"path": "notes.txt", "content": "a    b\n"}),
                )
            ),
            ServerReply(text="tidied"),
            ServerReply(text="done"),
        ],
        yolo=True,
    )
    assert outcome.text == "done"
    assert "Use 'rg' (ripgrep) instead of 'grep'" in tool_results(requests[1])[0]
    protected, _written = tool_results(requests[3])  # the sub-agent's calls
    assert protected.startswith("Blocked by a hook") and not (project.folder / ".env").exists()
    assert (project.folder / "notes.txt").read_text(encoding="utf-8") == "a b\n"  # formatted after the write
