"""What a prompt asks for, read without a model: its kind, the names and words to search for.

A 1.5B model cannot be trusted to plan its searches, so the small-model harness reads the prompt
itself. This reading is deliberately plain: the kind of request from its leading words, and search
terms from what users write when they mean code (``backticks``, ``snake_case``, ``CamelCase``,
``dotted.names``, ``file.py``, ``call()``), then from the remaining content words, which also
stand for identifiers when joined (``digest method`` -> ``digest_method``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from typing import Literal

from nestor.runtime.features.small.understanding.code_words import (
    BOUND_WEIGHT,
    PROTOCOL_WEIGHT,
    bound_names,
    protocol_names,
)

RequestKind = Literal["question", "tour", "change"]

_CHANGE_VERBS = (
    "fix|repair|rename|add|implement|change|update|remove|delete|refactor|make|write|create|modify|"
    "replace|move|introduce|support|extend|correct|edit|convert|rewrite|adjust|handle|give(?!\\s+(?:me|us|a|an)\\b)|"
    # The imperatives of everyday edits: refactors, docs, dependencies, behaviour switched or bounded.
    "extract|inline|split|merge|drop|document|annotate|bump|upgrade|downgrade|pin|deprecate|simplify|"
    "optimi[sz]e|clean|tidy|reorder|reformat|sort|port|wrap|expose|export|insert|append|prepend|"
    "enable|disable|switch|swap|revert|set|raise|lower|increase|decrease|reduce|limit|allow|forbid|"
    "prevent|ensure|avoid|skip|translate|log|include|exclude"
)
# "Fix the test", "please add ...", "can you rename ...", "I need you to add ...".
_CHANGE_REQUEST = re.compile(
    rf"^\s*(?:(?:please|pls|now|then|ok|okay|so)[,\s]+)*"
    rf"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|i\s+(?:need|want)\s+you\s+to\s+|let'?s\s+)?"
    rf"(?:{_CHANGE_VERBS})\b",
    re.IGNORECASE,
)
# A failing test reported as such is a request to fix it even when phrased as a statement.
_FAILING = re.compile(r"\b(?:fails?|failing|failed|broken|breaks|error(?:s|ed)?)\b", re.IGNORECASE)
# "I'd like an `invert(d)` function in dicttoolz that ...": asked for as a wish, not a verb.
_WANTS_NEW_CODE = re.compile(
    r"\b(?:i'?d\s+like|i\s+would\s+like|i\s+want|i\s+need|we\s+need)\s+(?:a|an)\s+(?:new\s+)?"
    r"(?:`[^`\n]+`\s+|[\w.]+(?:\([^)\n]*\))?\s+)?(?:function|method|property|class|option|flag|parameter)\b",
    re.IGNORECASE,
)
_FIX_WORDS = re.compile(r"\b(?:fix|repair|make\s+it\s+pass|get\s+it\s+passing|solve)\b", re.IGNORECASE)
# "Find the bug and fix it": a request whose change verb is not its first word.
_FIX_CLAUSE = re.compile(
    r"\b(?:and|then)\s+(?:please\s+)?(?:fix|repair|correct)\s+(?:it|this|that|them|the\s+\w+)\b",
    re.IGNORECASE,
)
# "Write a commit message for my changes": text for the user to use, not a change to the project.
_TEXT_FOR_THE_USER = re.compile(
    r"\b(?:commit\s+message|(?:pr|pull\s+request|merge\s+request)\s+(?:description|title|summary|body|text))\b",
    re.IGNORECASE,
)
_QUESTION_OPENING = re.compile(
    r"^\s*(?:how|what|why|where|which|who|when|can|could|should|would|is|are|do|does|did)\b", re.IGNORECASE
)
_TOUR = re.compile(
    r"\b(?:tour|overview|walk\s*through|what\s+is\s+this\s+(?:project|repo(?:sitory)?|code\s*base)|"
    r"(?:how\s+is|how's)\s+(?:this|the)\s+(?:project|repo(?:sitory)?|code\s*base)\s+(?:laid\s+out|organi[sz]ed|"
    r"structured)|layout\s+of\s+(?:this|the)\s+(?:project|repo(?:sitory)?))\b",
    re.IGNORECASE,
)
# A tour is also asked for aspect by aspect: what it is, how it is laid out, how to run its tests.
_TOUR_ASPECTS = (
    re.compile(
        r"\bwhat(?:'s|\s+is)\s+(?:it|this)(?:\s+\w+)?\s+for\b|"
        r"\bwhat\s+(?:is\s+(?:it|this)\b|(?:it|this\s+\w+)\s+(?:is|does)\b|does\s+(?:it|this\s+\w+)\s+do)",
        re.I,
    ),
    re.compile(
        r"\b(?:organi[sz]ed|laid\s+out|layout|structured|structure|map\s+of|"
        r"where\s+(?:the\s+)?(?:code|tests?|things|files|stuff)\b(?:\s+\w+)?\s*(?:lives?|is|are)?)",
        re.I,
    ),
    re.compile(
        r"\bhow\s+(?:do\s+(?:i|you|we)\s+|to\s+|can\s+i\s+)run\s+(?:the|its|their)?\s*"
        r"(?:tests|test\s+suite|unit\s+tests)\b",
        re.I,
    ),
)
_AGENT_REQUEST = re.compile(
    r"\b(?:use|ask|delegate\s+to|with|have|let|via|using)\s+(?:the\s+|an?\s+)?[`'\"]?([a-z][\w-]*)[`'\"]?"
    r"\s+(?:sub-?\s?)?agent\b",
    re.IGNORECASE,
)

_BACKTICKED = re.compile(r"`([^`\n]{1,80})`")
_QUOTED = re.compile(r"(?<![\w])[\"']([^\"'\n]{2,60})[\"'](?![\w])")
_HYPHENATED = re.compile(r"(?<![\w-])[A-Za-z]{2,}(?:-[A-Za-z]{2,})+(?![\w-])")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
_FILE_NAME = re.compile(
    r"(?:[\w.-]+/)*[\w-]+\.(?:py|pyi|js|ts|tsx|jsx|go|rs|java|kt|rb|c|h|cc|cpp|hpp|cs|"
    r"toml|cfg|ini|json|ya?ml|md|rst|txt|sh|sql|html|css)\b"
)

# Words that carry the question's shape rather than its subject.
_STOPWORDS_TEXT = """
    a an the this that these those it its is are was were be been being am do does did done doing
    has have had having of in on at to from by for with without as into onto about over under than
    then so and or not no nor but if else when where which who whom whose what why how whether there
    here out up down off all any both each few more most other some such only own same too very can
    could should would will shall may might must i me my we our you your he she they them their his
    her one two three please thanks thank tell show give find explain describe say list know need
    want use used uses using look looks see get gets got let lets make makes made way ways project
    repo repository repositories codebase package packages defined define defines definition
    implemented implement implementation happen happens called call calls number where's what's
    how's does it's also just like thing things part parts question answer answers work works
    working run runs running don doesn didn isn aren wasn weren won wouldn couldn shouldn haven
    hasn now kind sort agent agents quick report back try point fix fixes fixed fixing fail fails
    failed failing pass passes passed passing bug bugs broken library hey hi hello actually
    basically really right exactly pretty something somewhere anything everything stuff okay
    wanna gonna lot lots bit many much
"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
# Words too common to search alone that still name things in a phrase (digest method -> digest_method).
_PHRASE_ONLY_TEXT = """
    function functions method methods class classes value values default defaults file files line
    lines name names type types key keys error errors option options setting settings config test
    tests testing code module modules exception exceptions raise raises raised return returns
    returned
"""
_PHRASE_ONLY = frozenset(_PHRASE_ONLY_TEXT.split())
PROJECT_NAME_WEIGHT = 2.0
"""A plain word the project defines as a name: more than a word (1.0), less than code (3.0)."""


@dataclass(frozen=True, slots=True)
class SearchTerm:
    """Something to search the project for.

    Attributes:
        text: The identifier, phrase or file name.
        weight: How strongly it stands for what the prompt is about (exact names weigh most).
        exact: Search it case-sensitively as a whole word (an identifier or a quoted string);
            otherwise case-insensitively.
        is_file: It names a file (``signer.py``): matched against paths too.
        owner: What the user qualified the name with (``semver`` in ``semver.parse()``,
            ``Version`` in ``Version.parse()``): a module or a class, which says which of two
            definitions of the name is meant.
        prose: The user wrote it as a plain word (``countby``, ``signature``), not as code: how
            much it says depends on how common it is in the project (see retrieval).
        common: A plain word on many lines of the project ("build" in a library with a
            ``build`` property): a definition of it is not what the user asks about.
        qualifier: It qualifies the name asked about (``Version`` in ``Version.parse()``): its
            definition is context, not the answer.

    """

    text: str
    weight: float
    exact: bool = True
    is_file: bool = False
    owner: str | None = None
    prose: bool = False
    common: bool = False
    qualifier: bool = False


@dataclass(frozen=True, slots=True)
class Intent:
    """A prompt, read.

    Attributes:
        kind: ``question`` (find and explain; nothing changes), ``tour`` (what the project is,
            its layout, how to run its tests) or ``change`` (edit the code).
        terms: What to search for, strongest first.
        agent: The agent the user asked to use (``explore`` in "use the explore agent"), or None.
        failing_tests: Names of tests the prompt says fail (``test_foo``), if any.
        words: The prompt's words, lowercased, in order (what kind of answer it wants: an
            exception, a default).

    """

    kind: RequestKind
    terms: tuple[SearchTerm, ...]
    agent: str | None = None
    failing_tests: tuple[str, ...] = field(default_factory=tuple)
    words: tuple[str, ...] = field(default_factory=tuple)


def read_intent(
    prompt: str, agent_names: Iterable[str] = (), project_names: Container[str] = frozenset()
) -> Intent:
    """Read ``prompt``: its kind, search terms, named agent and failing tests.

    ``project_names`` are the names the project defines (:mod:`.symbols`): a plain word that is
    one of them (``countby``) is searched as that name.
    """
    agent = _named_agent(prompt, agent_names)
    terms = search_terms(prompt, project_names)
    failing = tuple(
        dict.fromkeys(t.text.removesuffix("()") for t in terms if t.text.startswith("test_") and t.exact)
    )
    words = tuple(word.lower() for word in re.findall(r"[A-Za-z]+", prompt))
    return Intent(kind=request_kind(prompt), terms=terms, agent=agent, failing_tests=failing, words=words)


def request_kind(prompt: str) -> RequestKind:
    """Whether ``prompt`` asks for a change, a tour of the project, or an answer."""
    if _TEXT_FOR_THE_USER.search(prompt) or asks_to_commit(prompt):
        return "question"  # answered from git's record (nestor makes no commit itself)
    # A sentence that opens with a change verb asks for a change; "How do I add ...?" does not.
    sentences = re.split(r"(?<=[.!?;])\s+|\n+", prompt.strip())
    if any(_CHANGE_REQUEST.match(sentence) for sentence in sentences):
        return "change"
    if any(_FIX_CLAUSE.search(s) and not _QUESTION_OPENING.match(s) for s in sentences):
        return "change"
    if _FAILING.search(prompt) and _FIX_WORDS.search(prompt):
        return "change"
    if _WANTS_NEW_CODE.search(prompt):
        return "change"
    if _TOUR.search(prompt) or sum(bool(aspect.search(prompt)) for aspect in _TOUR_ASPECTS) >= 2:
        return "tour"
    return "question"


_COMMIT_REQUEST = re.compile(
    r"^\s*(?:(?:please|now|then|ok|okay|so)[,\s]+)*(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
    r"(?:git\s+)?(?:commit|(?:create|make|do)\s+(?:a\s+|the\s+)?commit)\b",
    re.IGNORECASE | re.MULTILINE,
)


def asks_to_commit(prompt: str) -> bool:
    """Whether ``prompt`` asks nestor to make a git commit ("commit my changes with a good message")."""
    return _COMMIT_REQUEST.search(prompt) is not None


def _named_agent(prompt: str, agent_names: Iterable[str]) -> str | None:
    known = {name.lower(): name for name in agent_names}
    for match in _AGENT_REQUEST.finditer(prompt):
        name = match.group(1).lower()
        if name in known:
            return known[name]
    return None


def search_terms(prompt: str, project_names: Container[str] = frozenset()) -> tuple[SearchTerm, ...]:
    """The names, files and words of ``prompt`` worth searching for, strongest first, deduplicated.

    A plain word, or two joined (``digest method`` -> ``digest_method``), that the project defines
    (``project_names``) is searched as that name, whole and case-sensitive, weighing more than a
    word but less than a name the user wrote as code.
    """
    found: dict[str, SearchTerm] = {}

    def add(term: SearchTerm) -> None:
        key = term.text if term.exact else term.text.lower()
        current = found.get(key)
        if current is None or current.weight < term.weight:
            found[key] = term

    text = prompt
    for match in _BACKTICKED.finditer(prompt):
        for term in _terms_in_code(match.group(1)):
            add(term)
    text = _BACKTICKED.sub(" ", text)
    for match in _QUOTED.finditer(text):
        quoted = match.group(1).strip()
        if re.search(r"[A-Za-z]", quoted) and (looks_like_code(quoted) or len(quoted.split()) <= 4):
            add(SearchTerm(quoted, 3.0, exact=looks_like_code(quoted)))
    for match in _FILE_NAME.finditer(text):
        add(SearchTerm(match.group(0), 3.0, is_file=True))
    words: list[str] = []
    prose = _FILE_NAME.sub(" ", text)
    for match in _HYPHENATED.finditer(prose):
        # "URL-safe" is url_safe, "low-stock" low_stock: one thing, whatever its parts say alone.
        add(SearchTerm(match.group(0).lower().replace("-", "_"), 2.0, exact=False, prose=True))
    for match in _WORD.finditer(prose):
        word = match.group(0)
        if (
            word.isalpha()
            and word.isupper()
            and project_names
            and not _is_called(prose, match)
            and not _names_part(word, project_names)
        ):
            word = word.lower()  # an acronym in prose (JSON, HTTP), in none of the project's names
        if looks_like_code(word) or _is_called(prose, match):
            for term in _terms_in_code(word):
                add(term)
            words.append("")  # an identifier breaks a phrase of plain words
        elif word in project_names and word.lower() not in _STOPWORDS and word.lower() not in _PHRASE_ONLY:
            add(SearchTerm(word, PROJECT_NAME_WEIGHT, prose=True))
            words.append("")
        elif word.lower() not in _STOPWORDS and len(word) > 2:
            words.append(word.lower())
        else:
            words.append("")
    for phrase in _phrases(words):
        joined = "_".join(phrase)
        if joined in project_names:
            add(SearchTerm(joined, PROJECT_NAME_WEIGHT, prose=True))
            continue
        # Searched flexibly (see retrieval.term_pattern): digest_method also finds DigestMethod.
        add(SearchTerm(joined, 1.5 if len(phrase) == 2 else 1.3, exact=False, prose=True))
    for word in words:
        if word and word not in _PHRASE_ONLY:
            add(SearchTerm(_stem(word), 1.0, exact=False, prose=True))
    subjects = [_stem(word) for word in dict.fromkeys(words) if word and word not in _PHRASE_ONLY]
    for name in bound_names(prose, subjects):
        add(SearchTerm(name, BOUND_WEIGHT, exact=False, prose=True))
    for name in protocol_names(prose):
        add(SearchTerm(name, PROTOCOL_WEIGHT))
    return tuple(sorted(found.values(), key=lambda t: -t.weight))


def _terms_in_code(code: str) -> list[SearchTerm]:
    """Terms in a piece of code the user wrote: the whole name, and each part of a dotted one."""
    code = code.strip().removesuffix("()")
    if _FILE_NAME.fullmatch(code):
        return [SearchTerm(code, 3.0, is_file=True)]
    names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code)
    if not names:
        return [SearchTerm(code, 2.5, exact=False)] if code else []
    owner = names[-2] if len(names) > 1 else None
    # obj.method: the method is what is asked about; a name of one or two letters (`a=%E0%A4%A`,
    # a cookie's text, or a local `x`) is on too many lines to say anything.
    terms = [SearchTerm(names[-1], 3.0, owner=owner)] if len(names[-1]) > 2 else []
    terms.extend(SearchTerm(name, 2.0, qualifier=True) for name in names[:-1] if len(name) > 2)
    return terms


def _names_part(word: str, project_names: Container[str]) -> bool:
    """Whether ``word`` is one of the project's names or a part of one (``SKU`` of ``SKU_PATTERN``)."""
    if word in project_names:
        return True
    if not isinstance(project_names, Iterable):
        return False
    parts = re.compile(rf"(?:^|_){re.escape(word)}(?:_|$|(?=[A-Z][a-z]))")
    return any(parts.search(name) for name in project_names)  # pyright: ignore[reportUnknownVariableType]


def _is_called(text: str, match: re.Match[str]) -> bool:
    """Whether a plain word is written as code: a call (``compare(x)``) or a chained method."""
    return text[match.end() : match.end() + 1] == "(" or text[match.start() - 1 : match.start()] == "."


def looks_like_code(word: str) -> bool:
    """An identifier a user would not write in prose: snake_case, CamelCase, dotted, a call, CONSTANT."""
    bare = word.removesuffix("()")
    return (
        word.endswith("()")
        or "_" in bare.strip("_")
        or "." in bare
        or (bool(re.search(r"[A-Z]", bare[1:])) and bool(re.search(r"[a-z]", bare)))
        or (bare.isupper() and len(bare) > 2)
    )


def _phrases(words: list[str]) -> list[list[str]]:
    """Runs of two or three adjacent content words ('' separates runs)."""
    phrases: list[list[str]] = []
    run: list[str] = []
    for word in [*words, ""]:
        if word:
            run.append(word)
            continue
        for size in (3, 2):
            phrases.extend(run[i : i + size] for i in range(len(run) - size + 1))
        run = []
    return phrases


def _stem(word: str) -> str:
    """The word without the ending that varies: ``verifying`` -> ``verify``, ``compared`` -> ``compar``.

    A stem is searched as a prefix (see retrieval.term_pattern), so it also finds
    ``verify_signature`` and ``compare_digest``. Stems shorter than four letters are not cut.
    """
    if word.endswith("ss"):
        return word
    endings = (
        ("ies", "y"),
        ("ation", ""),
        ("sion", "s"),
        ("tion", "t"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    )
    for ending, replacement in endings:
        if ending == "es" and not word.endswith(("ses", "xes", "zes", "ches", "shes")):
            continue
        if word.endswith(ending) and len(word) - len(ending) + len(replacement) >= 4:
            return word[: len(word) - len(ending)] + replacement
    return word


_RENAME_VERB = re.compile(r"\brenam(?:e|es|ed|ing)\b", re.IGNORECASE)
# Strongest first: an arrow is unambiguous, "to" and "into" nearly so; "as" also means "as well".
_RENAME_SEPARATORS = (
    re.compile(r"\s*(?:->|=>|→|⟶)\s*"),
    re.compile(r"\s+(?:to|into)\s+", re.IGNORECASE),
    re.compile(r"\s+as\s+", re.IGNORECASE),
)
_NAME_TOKEN = re.compile(r"`?([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?:\(\))?`?")


def read_rename(prompt: str, known: Callable[[str], bool]) -> tuple[str, str] | None:
    """``(old, new)`` when ``prompt`` asks to rename one of the project's names, else None.

    The new name is the first name after the separator ("to", "->", ...). The old one is a name
    before it that the project has (``known``): written in backticks first, else the nearest,
    so that "The `getter` helper is vague. Rename it to `make_getter`" renames ``getter`` and
    never "it". A dotted name stands for its last part (``Signer.derive_key`` -> ``derive_key``).
    """
    verb = _RENAME_VERB.search(prompt)
    if verb is None:
        return None
    for separator in _RENAME_SEPARATORS:
        for match in separator.finditer(prompt, verb.end()):
            after = _NAME_TOKEN.match(prompt, match.end())
            if after is None or _in_path(prompt, after.start(), after.end()):
                continue  # "to src/pkg/report.py" renames a file, not a name
            new = after.group(1).rsplit(".", 1)[-1]
            old = _renamed_name(prompt[: match.start()], known)
            if old is not None and old != new and new.lower() not in _STOPWORDS:
                return old, new
    return None


def _renamed_name(before: str, known: Callable[[str], bool]) -> str | None:
    """The name the text before a rename's separator means: backticked first, then nearest."""
    tokens = [
        (match.group(0).startswith("`"), match.group(1).rsplit(".", 1)[-1])
        for match in _NAME_TOKEN.finditer(before)
        if not _in_path(before, match.start(), match.end())
    ]
    for backticked_only in (True, False):
        for backticked, name in reversed(tokens):
            if (backticked or not backticked_only) and name.lower() not in _STOPWORDS and known(name):
                return name
    return None


def _in_path(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is part of a file path (``src/pkg/reports.py``), not a name."""
    token = text[start:end].strip("`")
    return (
        text[end : end + 1] == "/"
        or text[start - 1 : start] in ("/", "\\")
        or _FILE_NAME.fullmatch(token.removesuffix("()")) is not None
    )


_PART_BREAK = re.compile(
    r"\?\s+|\?$|\n+|(?:^|\s)(?:\d+[.)]|\(\d+\))\s+|;\s+|\s+(?:oh\s+)?and\s+(?:also\s+)?(?=(?:is|are|does|do|what|which|where|how|why|when)\b)"
)


def question_parts(prompt: str) -> list[str]:
    """The separate questions of a prompt that asks several ("1) ... 2) ...", "What ...? And ...?").

    A lead-in that ends with a colon ("A few things about errors:") is context, not a question.
    One part (the prompt itself) when it asks one thing.
    """
    pieces = [piece.strip(" ,.:-") for piece in _PART_BREAK.split(prompt)]
    parts = [
        piece
        for piece in pieces
        if piece and len(re.findall(r"[A-Za-z]{3,}", piece)) >= 3 and not prompt.count(piece + ":")
    ]
    return parts if len(parts) > 1 else [prompt]


def delegated_task(prompt: str) -> str:
    """``prompt`` without the words that ask for an agent: what the agent itself is to do.

    "Use the explore agent to find X" -> "find X"; "Can you have the explore agent check X?" ->
    "check X?"; "Find X, using the explore agent." -> "Find X."
    """
    match = _AGENT_REQUEST.search(prompt)
    if match is None:
        return prompt.strip()
    before = re.sub(
        r"(?i)(?:\b(?:please|can\s+you|could\s+you|would\s+you|now|then)[\s,]*)+$",
        "",
        prompt[: match.start()],
    )
    after = re.sub(r"(?i)^\s*(?:to|and|so\s+that\s+it|,)\s+", " ", prompt[match.end() :])
    after = after.strip().lstrip(":;,- ").strip()
    task = (before.rstrip(" ,;:-") + " " + after).strip()
    task = re.sub(r"\s+([.?!])$", r"\1", task)
    task = re.sub(r"([.?!])\s*[.?!]$", r"\1", task)
    return task[:1].upper() + task[1:] if task else prompt.strip()
