"""A prompt's text: plain prompts as they are, prompts with images by their text items."""

from __future__ import annotations

from pydantic_ai.messages import BinaryContent, ImageUrl, TextContent

from nestor.core.prompts import prompt_text

PNG = BinaryContent(data=b"\x89PNG\r\n\x1a\n", media_type="image/png")


def test_a_text_prompt_is_its_own_text() -> None:
    assert prompt_text("fix the bug") == "fix the bug"
    assert prompt_text("fix the bug", name_files=True) == "fix the bug"


def test_a_prompt_with_images_gives_its_text_items_in_order() -> None:
    prompt = [
        "what is on",
        PNG,
        TextContent(content="this screenshot?"),
        ImageUrl(url="https://x.test/a.png"),
    ]
    assert prompt_text(prompt) == "what is on\nthis screenshot?"


def test_files_are_named_for_listings_a_person_reads() -> None:
    prompt = ["look", PNG, ImageUrl(url="https://x.test/a.png")]
    assert prompt_text(prompt, name_files=True) == "look\n[image/png]\n[image: https://x.test/a.png]"
