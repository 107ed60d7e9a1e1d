"""Where histories are cut, how summaries are marked, and what the model sees after a compaction."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.core.errors import StoreError
from nestor.runtime.features.compaction import find_cut, render_transcript, summarizer_prompt, summary_message
from nestor.runtime.kernel.compaction_mark import CompactionMark
from nestor.runtime.kernel.history import (
    compaction_mark,
    load_visible_history,
    measured_from,
    visible_history,
)
from nestor.store import Database, MessageStore, SessionStore, open_database


def prompt(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(text)])


def calls(tool_call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("view", {"path": "a.py"}, tool_call_id)])


def result(tool_call_id: str, content: str = "file text") -> ModelRequest:
    return ModelRequest(parts=[ToolReturnPart("view", content, tool_call_id=tool_call_id)])


def answer(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def mark(kept: int) -> CompactionMark:
    return CompactionMark(kept_messages=kept, summarized_messages=3, trigger="threshold", tokens_before=9000)


def conversation() -> list[ModelMessage]:
    return [
        prompt("first"),  # 0
        calls("c1"),  # 1
        result("c1", "x" * 4000),  # 2
        answer("done first"),  # 3
        prompt("second"),  # 4
        calls("c2"),  # 5
        result("c2"),  # 6
    ]


def test_the_cut_keeps_the_latest_response_and_what_follows_it_when_little_may_be_kept() -> None:
    assert find_cut(conversation(), keep_tokens=0) == 5


def test_the_cut_keeps_as_many_recent_messages_as_fit() -> None:
    history = conversation()
    # Everything from index 3 is small; the 4000-character result at index 2 is ~1000 tokens.
    assert find_cut(history, keep_tokens=200) == 3
    assert find_cut(history, keep_tokens=100_000) == 1


def test_the_cut_is_always_just_before_a_response() -> None:
    history = conversation()
    for keep in (0, 50, 200, 1000, 5000):
        cut = find_cut(history, keep)
        assert cut is not None and isinstance(history[cut], ModelResponse)


def test_nothing_to_cut_without_an_earlier_message() -> None:
    assert find_cut([], 0) is None
    assert find_cut([prompt("only")], 0) is None
    # Only the previous summary would be summarised again: not worth a request.
    assert find_cut([summary_message("s", mark(0)), answer("a"), prompt("b")], 10_000) is None


def test_summary_messages_are_marked_and_survive_the_store_format() -> None:
    message = summary_message("## Goal\nfix it", mark(2))
    stored = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json([message]))[0]
    assert compaction_mark(stored) == mark(2)
    part = stored.parts[0]
    assert isinstance(part, UserPromptPart) and "<summary>\n## Goal\nfix it\n</summary>" in str(part.content)
    assert compaction_mark(prompt("plain")) is None
    assert compaction_mark(ModelRequest(parts=[UserPromptPart("x")], metadata={"nestor": "other"})) is None


def test_visible_history_is_the_latest_summary_its_kept_messages_and_what_came_after() -> None:
    history = conversation()
    summary = summary_message("one", mark(2))
    later = [answer("later"), prompt("third")]
    stored = [*history, summary, *later]
    assert visible_history(stored) == [summary, history[5], history[6], *later]
    assert visible_history(history) == history


def test_a_second_compaction_skips_the_first_summary_when_counting_kept_messages() -> None:
    history = conversation()
    first = summary_message("one", mark(2))
    second = summary_message("two", mark(3))
    stored = [*history[:5], first, *history[5:], second, answer("after")]
    # Kept by the second: the three messages before it that are not summaries.
    assert visible_history(stored) == [second, history[4], history[5], history[6], stored[-1]]


def _stored(tmp_path: Path, messages: list[ModelMessage]) -> tuple[Database, MessageStore, str]:
    db = open_database(tmp_path / "nestor.db")
    store = MessageStore(db)
    session_id = SessionStore(db).create(str(tmp_path)).id
    for message in messages:
        store.append(session_id, message)
    return db, store, session_id


def test_loading_a_stored_session_decodes_only_what_the_model_sees(tmp_path: Path) -> None:
    history = conversation()
    first = summary_message("one", mark(2))
    second = summary_message("two", mark(3))
    stored = [*history[:5], first, *history[5:], second, answer("after")]
    db, store, session_id = _stored(tmp_path, stored)
    with db:
        assert load_visible_history(store, session_id) == visible_history(stored)
        # A damaged message before the kept ones is never read: only the visible part is decoded.
        db.execute("UPDATE messages SET data = 'not json' WHERE session_id = ? AND seq = 1", (session_id,))
        with pytest.raises(StoreError):
            store.list(session_id)
        assert load_visible_history(store, session_id) == visible_history(stored)


def test_loading_a_session_without_summaries_reads_it_all(tmp_path: Path) -> None:
    history = conversation()
    db, store, session_id = _stored(tmp_path, history)
    with db:
        assert load_visible_history(store, session_id) == history
        assert load_visible_history(store, "ses_unknown") == []


def test_usage_is_measured_only_after_the_kept_messages() -> None:
    assert measured_from(conversation()) == 0
    assert measured_from([summary_message("s", mark(2)), calls("c"), result("c")]) == 3


def test_transcript_shows_every_kind_of_message_and_cuts_long_results() -> None:
    history = [summary_message("earlier work", mark(0)), *conversation()]
    text = render_transcript(history, max_chars=100_000)
    assert "[earlier summary]" in text and "earlier work" in text
    assert "[user]\nfirst" in text and "[assistant]\ndone first" in text
    assert '[assistant calls view] {"path":"a.py"}' in text
    assert "[result of view (success)]" in text
    assert "x" * 4000 not in text and "characters left out" in text


def test_transcript_fits_the_budget_by_cutting_results_then_the_middle() -> None:
    history: list[ModelMessage] = []
    for index in range(200):
        history += [calls(f"c{index}"), result(f"c{index}", "y" * 3000)]
    history.insert(0, prompt("the original goal"))
    text = render_transcript(history, max_chars=20_000)
    assert len(text) <= 20_000
    assert text.startswith("[user]\nthe original goal")  # the goal survives
    assert "middle of the transcript was left out" in text


def test_summarizer_prompt_carries_the_focus() -> None:
    assert "focus on: the parser" in summarizer_prompt("T", "the parser")
    assert "focus" not in summarizer_prompt("T", None)
