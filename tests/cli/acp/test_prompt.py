"""ACP content blocks to the prompt nestor's agent gets: text, images, embedded resources, links."""

from __future__ import annotations

import base64

import acp
import pytest
from pydantic_ai.messages import BinaryContent

from nestor.cli.acp.prompt import MAX_IMAGE_BYTES, prompt_content

PNG_BYTES = b"\x89PNG\r\n\x1a\n-a-tiny-image-"
PNG = base64.b64encode(PNG_BYTES).decode()


def test_text_blocks_stay_one_text_prompt_and_resources_become_text() -> None:
    prompt = prompt_content(
        [
            acp.text_block("explain"),
            acp.resource_block(acp.embedded_text_resource("file:///repo/src/a%20b.py", "x = 1\n")),
            acp.resource_link_block("notes.md", "file:///repo/notes.md"),
            acp.text_block(""),
        ]
    )
    assert (
        prompt
        == 'explain\n<context source="/repo/src/a b.py">\nx = 1\n\n</context>\n[notes.md](/repo/notes.md)'
    )


def test_images_and_image_blobs_go_as_binary_content_between_the_texts() -> None:
    prompt = prompt_content(
        [
            acp.text_block("compare"),
            acp.image_block(PNG, "image/png"),
            acp.text_block("with"),
            acp.resource_block(acp.embedded_blob_resource("file:///repo/shot.png", PNG)),
            acp.resource_block(
                acp.embedded_blob_resource("file:///repo/data.bin", "AAAA", mime_type="application/zip")
            ),
        ]
    )
    assert prompt == [
        "compare",
        BinaryContent(data=PNG_BYTES, media_type="image/png"),
        "with\n(attached: /repo/shot.png)",
        BinaryContent(data=PNG_BYTES, media_type="image/png"),
        "(attached: /repo/data.bin, application/zip, not shown)",
    ]


def test_an_image_alone_is_a_prompt_of_one_image() -> None:
    assert prompt_content([acp.image_block(PNG, "image/png")]) == [
        BinaryContent(data=PNG_BYTES, media_type="image/png")
    ]


@pytest.mark.parametrize(
    ("block", "says"),
    [
        (acp.image_block("not base64!", "image/png"), "the image data is not base64"),
        (acp.image_block("", "image/png"), "the image has no data"),
        (acp.image_block(PNG, "application/pdf"), "'application/pdf' is not an image type"),
        (acp.image_block("A" * (MAX_IMAGE_BYTES * 4 // 3 + 8), "image/png"), "larger than 20 MB"),
    ],
)
def test_a_bad_image_is_an_invalid_params_error_in_one_line(block: object, says: str) -> None:
    with pytest.raises(acp.RequestError) as caught:
        prompt_content([acp.text_block("look"), block])
    assert caught.value.code == -32602
    assert says in str(caught.value.data)
