"""How long web_fetch's HTML -> Markdown step takes on a 5 MB page, the largest it ever reads.

The page is generated (deterministic, no network) to look like a large real one: a header, a
navigation bar with hundreds of links, inline styles and scripts, SVG icons, an iframe, asides and
a footer around hundreds of articles, each with headings, paragraphs full of inline links and
markup, lists, tables, code blocks, block quotes and images (some with data: URIs). It is built to
just under fetch's body cap (``MAX_BODY_BYTES``), since a bigger page is cut there.

Timed the way the fetch tool converts today (``fetch._render``): html-to-markdown's ``convert``
with fetch's noise selectors removed, data media reduced to their alt text, links resolved against
the page URL, no metadata. Side by side, in the same run:

- (a) Markdown, fetch's options (the path under test);
- (b) plain text, fetch's options (``format: "text"``);
- (c) html-to-markdown's defaults, with no noise removal (the library's own floor);
- (d) when ``nestor.tools.web.content`` is there (the conversion is moving to it), its
  ``convert`` on the page as the HTTP client hands it over, so decoding the body is included.

Each is converted once to warm up, then timed three times, interleaved with the others so all
see the same machine load; the median counts. A fixed pure-Python loop is timed in the same
rounds: on this shared host the machine's speed changes from run to run (by up to half), and that
reference shows by how much while the ratios between converters stay put. The target is (a), and
(d) when present, under 0.5 s. The output is checked too (the noise is gone, the last article is
there, links are absolute), so a broken conversion cannot pass for a fast one.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from random import Random
from typing import Any

from html_to_markdown import ConversionOptions, InlineDataMedia, OutputFormat, convert

try:
    from nestor.tools.web.content import NOISE_SELECTORS
except ImportError:  # before the conversion moved out of fetch.py
    from nestor.tools.fetch import NOISE_SELECTORS

MAX_BODY_BYTES = 5 * 1024 * 1024
"""web_fetch reads at most this much of a body: the largest page it ever converts."""

PAGE_URL = "https://docs.example.com/guide/index.html"
TARGET_S = 0.5
REPEATS = 3
REFERENCE_STEPS = 10_000_000
REFERENCE = "reference: sum(range(10**7)) in Python"
NOISE_MARKERS = ("NAV-NOISE", "SCRIPT-NOISE", "STYLE-NOISE", "FOOTER-NOISE", "ASIDE-NOISE", "SVG-NOISE")

_WORDS = [
    "agent",
    "session",
    "store",
    "message",
    "token",
    "window",
    "history",
    "summary",
    "request",
    "response",
    "tool",
    "result",
    "permission",
    "policy",
    "sandbox",
    "registry",
    "provider",
    "retry",
    "stream",
    "event",
    "cursor",
    "offset",
    "budget",
    "usage",
    "the",
    "a",
    "of",
    "to",
    "in",
    "and",
    "for",
    "with",
    "on",
    "when",
    "that",
    "each",
    "every",
    "one",
    "its",
    "is",
    "are",
    "be",
    "can",
    "may",
]


def _sentence(rng: Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randrange(8, 22))]
    return " ".join(words).capitalize() + "."


def _paragraph(rng: Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randrange(3, 7)):
        sentence = _sentence(rng)
        roll = rng.random()
        if roll < 0.3:
            sentence += f' See <a href="/guide/{rng.choice(_WORDS)}-{rng.randrange(999)}.html">the guide</a>.'
        elif roll < 0.45:
            sentence += f" Use <code>{rng.choice(_WORDS)}_{rng.choice(_WORDS)}()</code> for it."
        elif roll < 0.6:
            sentence += f" This is <strong>{rng.choice(_WORDS)}</strong>, not <em>{rng.choice(_WORDS)}</em>."
        parts.append(sentence)
    return f"<p>{' '.join(parts)}</p>"


def _list(rng: Random) -> str:
    tag = rng.choice(("ul", "ol"))
    items = "".join(
        f'<li><a href="https://ref.example.org/{rng.randrange(9999)}">{_sentence(rng)}</a></li>'
        if rng.random() < 0.3
        else f"<li>{_sentence(rng)}</li>"
        for _ in range(rng.randrange(3, 9))
    )
    return f"<{tag}>{items}</{tag}>"


def _table(rng: Random) -> str:
    columns = rng.randrange(3, 6)
    head = "".join(f"<th>{rng.choice(_WORDS).title()}</th>" for _ in range(columns))
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{rng.choice(_WORDS)} {rng.randrange(1000)}</td>" for _ in range(columns))
        + "</tr>"
        for _ in range(rng.randrange(4, 12))
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _code(rng: Random) -> str:
    lines = [f"def {rng.choice(_WORDS)}_{n}(value: int) -&gt; int:\n    return value * {n}" for n in range(4)]
    return f'<pre><code class="language-python">{chr(10).join(lines)}</code></pre>'


def _image(rng: Random) -> str:
    if rng.random() < 0.2:
        data = (
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
        )
        return f'<img src="data:image/png;base64,{data * 40}" alt="diagram {rng.randrange(99)}">'
    return f'<img src="/img/{rng.randrange(9999)}.png" alt="figure {rng.randrange(99)}">'


_BLOCKS: tuple[Callable[[Random], str], ...] = (
    _paragraph,
    _paragraph,
    _paragraph,
    _list,
    _table,
    _code,
    _image,
)


def article(index: int) -> str:
    """One article: a heading, then a dozen blocks of every kind, with an aside."""
    rng = Random(index)
    blocks = [f'<h2 id="section-{index}">Section {index}: {_sentence(rng)[:-1]}</h2>']
    for number in range(rng.randrange(8, 16)):
        if number == 4:
            blocks.append(f"<h3>{_sentence(rng)[:-1]}</h3>")
        blocks.append(rng.choice(_BLOCKS)(rng))
    blocks.append(f"<blockquote><p>{_sentence(rng)}</p></blockquote>")
    blocks.append(f'<aside class="related">ASIDE-NOISE {_list(rng)}</aside>')
    return f'<article class="doc">{"".join(blocks)}<p>END-OF-ARTICLE-{index}</p></article>\n'


def page(size_bytes: int = MAX_BODY_BYTES - 64 * 1024) -> tuple[str, int]:
    """A page of about ``size_bytes`` bytes of UTF-8, and how many articles it holds."""
    nav_links = "".join(f'<li><a href="/guide/page-{n}.html">NAV-NOISE {n}</a></li>' for n in range(400))
    icon = '<svg viewBox="0 0 24 24"><path d="M12 2L2 7l10 5 10-5-10-5z"/><text>SVG-NOISE</text></svg>'
    script = (
        "<script>/* SCRIPT-NOISE */ " + "window.dataLayer.push({event: 'view', id: 1});" * 400 + "</script>"
    )
    style = "<style>/* STYLE-NOISE */ " + ".doc p { margin: 0 0 1em; color: #333 } " * 400 + "</style>"
    head = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Guide</title>{style}{script}'
        f'</head><body><header><div class="logo">{icon}</div><nav><ul>{nav_links}</ul></nav></header>'
        '<iframe src="https://ads.example.net/banner">SCRIPT-NOISE</iframe><main><h1>The complete guide</h1>'
    )
    tail = (
        f"</main><footer>FOOTER-NOISE {nav_links.replace('NAV-NOISE', 'FOOTER-NOISE')}</footer>"
        f"{script}<noscript>SCRIPT-NOISE</noscript></body></html>"
    )
    parts = [head]
    size = len(head.encode()) + len(tail.encode())
    count = 0
    while True:
        block = article(count)
        block_size = len(block.encode())
        if size + block_size > size_bytes:
            break
        parts.append(block)
        size += block_size
        count += 1
    parts.append(tail)
    return "".join(parts), count


def fetch_options(output_format: OutputFormat) -> ConversionOptions:
    """The options ``fetch._render`` converts HTML with, for ``output_format``."""
    return ConversionOptions(
        output_format=output_format,
        exclude_selectors=list(NOISE_SELECTORS),
        extract_metadata=False,
        inline_data_media=InlineDataMedia.ALT_TEXT_ONLY,
        base_url=PAGE_URL,
    )


def fetch_markdown(html: str) -> str:
    """HTML to Markdown as web_fetch does it: noise removed, links absolute, data media as alt text."""
    return convert(html, fetch_options(OutputFormat.MARKDOWN)).content or ""


def fetch_text(html: str) -> str:
    """HTML to plain text with fetch's options (``format: "text"``)."""
    return convert(html, fetch_options(OutputFormat.PLAIN)).content or ""


def library_defaults(html: str) -> str:
    """html-to-markdown with its defaults: no noise removal, nothing resolved (the floor)."""
    return convert(html).content or ""


def content_module_converter() -> Callable[[str], str] | None:
    """web_fetch's own converter, ``nestor.tools.web.content.convert``, as ``html -> str``.

    It takes a fetched page (body bytes and headers), so the HTML is wrapped in one as the HTTP
    client would return it and the timing includes decoding the body. None when the module is not
    there or its interface is not the one this bench knows (the conversion is being moved).
    """
    try:
        content: Any = importlib.import_module("nestor.tools.web.content")
        pages: Any = importlib.import_module("nestor.tools.web.pages")
        convert_page = content.convert
        fetched_page = pages.FetchedPage
    except (ImportError, AttributeError):
        return None

    def converted(html: str) -> str:
        page = fetched_page(
            url=PAGE_URL, status=200, content_type="text/html; charset=utf-8", body=html.encode()
        )
        return str(convert_page(page).text)

    try:
        converted("<html><body><p>probe</p></body></html>")
    except (TypeError, AttributeError):
        return None
    return converted


@dataclass
class Timing:
    """Median wall and CPU seconds of one converter over the timed rounds, and its output."""

    wall_s: float
    cpu_s: float
    output: str


def time_converters(
    converters: dict[str, Callable[[str], str]], html: str, repeats: int = REPEATS
) -> dict[str, Timing]:
    """Warm each converter up once, then time them in ``repeats`` interleaved rounds.

    CPU time is shown beside wall time because this machine is shared: when other work competes
    for the cores, wall time grows while CPU time stays close to the converter's own cost.
    """
    outputs = {label: function(html) for label, function in converters.items()}
    walls: dict[str, list[float]] = {label: [] for label in converters}
    cpus: dict[str, list[float]] = {label: [] for label in converters}
    for _ in range(repeats):
        for label, function in converters.items():
            wall, cpu = time.perf_counter(), time.process_time()
            function(html)
            cpus[label].append(time.process_time() - cpu)
            walls[label].append(time.perf_counter() - wall)
    return {
        label: Timing(statistics.median(walls[label]), statistics.median(cpus[label]), outputs[label])
        for label in converters
    }


def reference_loop(_html: str) -> str:
    """A fixed pure-Python workload: how fast the machine is during this run."""
    return str(sum(range(REFERENCE_STEPS)))


def check_output(markdown: str, articles: int) -> None:
    """Fail loudly when the conversion kept page furniture or lost content."""
    kept = [marker for marker in NOISE_MARKERS if marker in markdown]
    assert not kept, f"noise left in the output: {kept}"
    assert f"END-OF-ARTICLE-{articles - 1}" in markdown, "the last article is missing"
    assert "https://docs.example.com/guide/" in markdown, "relative links were not made absolute"
    assert "data:image" not in markdown, "data: images were not reduced to their alt text"


def main() -> dict[str, float]:
    """Print the figures and return the median seconds of each converter."""
    html, articles = page()
    size = len(html.encode())
    converters: dict[str, Callable[[str], str]] = {
        "(a) markdown, fetch's options": fetch_markdown,
        "(b) plain text, fetch's options": fetch_text,
        "(c) library defaults, no noise removal": library_defaults,
    }
    moved = content_module_converter()
    if moved is not None:
        converters["(d) web.content.convert, decoding included"] = moved
    print(
        f"HTML -> Markdown of a {size / 1024 / 1024:.2f} MB page ({articles} articles), as web_fetch does it"
    )
    print(f"  (medians of {REPEATS} interleaved runs after a warm-up; web_fetch reads at most 5 MB)")
    print(f"  {'':44}{'wall':>9}{'cpu':>9}{'output':>17}{'MB/s':>7}{'vs (c)':>8}")
    timings = time_converters(converters | {REFERENCE: reference_loop}, html)
    reference = timings.pop(REFERENCE)
    floor = timings["(c) library defaults, no noise removal"].wall_s
    for label, timing in timings.items():
        print(
            f"  {label:44}{timing.wall_s * 1000:>6.0f} ms{timing.cpu_s * 1000:>6.0f} ms"
            f"{len(timing.output):>11,} chars{size / 2**20 / timing.wall_s:>7.1f}"
            f"{timing.wall_s / floor:>8.2f}"
        )
    print(f"  {REFERENCE:44}{reference.wall_s * 1000:>6.0f} ms  (machine speed; it varies on shared hosts)")
    for label, timing in timings.items():
        if label.startswith(("(a)", "(d)")):
            check_output(timing.output, articles)
            verdict = "PASS" if timing.wall_s < TARGET_S else "FAIL"
            print(f"  target: {label[:3]} under {TARGET_S:.1f} s (wall) -> {verdict} ({timing.wall_s:.3f} s)")
    if moved is None:
        print("  (nestor.tools.web.content.convert not usable: (d) left out)")
    return {label: timing.wall_s for label, timing in timings.items()}


if __name__ == "__main__":
    main()
