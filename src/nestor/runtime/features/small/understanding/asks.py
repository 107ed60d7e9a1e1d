"""What kind of answer a question asks for, and the requests nestor must not carry out.

Most questions are answered from evidence by the model (:mod:`..acting.questions`). Some have an
answer nestor can read off the code itself, exactly, where a 1.5B model lists X among X's own
callers: who calls a function, which tests cover it, every place that does something, the
members of an enum or class, what the git history or the current diff says, whether the tests
pass (by running them). And some requests must not be carried out at all: acting outside the
project (publishing, pushing, sending), reading secrets, destroying the project's work or its
tests. Read here from the words, without a model, like the rest of :mod:`.intent`.
"""

from __future__ import annotations

import re
from typing import Literal

AskKind = Literal["callers", "covers", "list", "members", "history", "tests", "general"]

# "Run the tests", "do the tests pass?", "which tests fail?": what the tests say now, by running them.
_RUN_TESTS = re.compile(
    r"^\s*(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:run|execute)\s+(?:the\s+|all\s+(?:the\s+)?|its\s+)?"
    r"(?:unit\s+)?(?:tests?|test\s+suite)\b|"
    r"\b(?:do|does|are|is)\s+(?:the\s+|all\s+(?:the\s+)?|its\s+)?(?:unit\s+)?(?:tests?|test\s+suite)\s+"
    r"(?:still\s+)?(?:pass(?:ing)?|green|fail(?:ing)?|broken|red)\b|"
    r"\bwhich\s+tests?\s+(?:fail|fails|are\s+failing|is\s+failing|break|are\s+broken)\b",
    re.IGNORECASE | re.MULTILINE,
)

_CALLERS = re.compile(
    r"\b(?:which|what|list\s+(?:the|all|every))\s+(?:other\s+)?(?:functions?|methods?|code|places?|parts?|callers?)\b"
    r"[^.?!\n]{0,40}\b(?:calls?|invokes?|uses?)\b|\bcallers?\s+of\b|"
    r"\bwhere\s+is\s+\S+\s+(?:called|invoked|used)\b|\bwho\s+calls\b",
    re.IGNORECASE,
)
_COVERS = re.compile(
    r"\b(?:which|what)\s+(?:unit\s+)?tests?\b[^.?!\n]{0,40}\b(?:covers?|tests?|checks?|exercises?|verif\w*)\b|"
    r"\bwhere\s+is\s+\S+\s+tested\b|\bis\s+\S+\s+tested\b",
    re.IGNORECASE,
)
_LIST = re.compile(
    r"^\s*(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:list|enumerate|find\s+all|find\s+every|show\s+(?:me\s+)?"
    r"(?:all|every))\b|\b(?:every|all\s+the|all)\s+(?:places?|lines?|spots?|calls?|uses?|usages?|occurrences?)\b",
    re.IGNORECASE,
)
_MEMBERS = re.compile(
    r"\b(?:every|all|which|what)\b[^.?!\n]{0,40}\b(?:the\s+)?`?[A-Za-z_]\w*`?\s+(?:enum|class|struct|type|object)\s+"
    r"(?:has|have|defines?|contains?|lists?)\b|\b(?:variants|members|fields)\s+of\b",
    re.IGNORECASE,
)
_HISTORY = re.compile(
    r"\b(?:commits?|committed|git\s+(?:log|history|blame|diff)|history|uncommitted|unstaged|staged|"
    r"my\s+(?:local\s+)?changes|current\s+diff|working\s+tree|last\s+change|changed\s+(?:recently|lately))\b",
    re.IGNORECASE,
)

# A request, not a question: the sentence opens with what to do ("please publish ...").
_IMPERATIVE = (
    r"^\s*(?:(?:please|now|then|ok|so|and|also)[,\s]+)*"
    r"(?:(?:can|could|would|will)\s+you\s+|i\s+(?:want|need)\s+you\s+to\s+)?"
)
# Acting outside the project, for the user, with their credentials: not nestor's to do unasked.
_OUTSIDE = re.compile(
    _IMPERATIVE + r"(?:publish|deploy|release|upload|push|send|e-?mail|post|tweet|share)\b[^.?!\n]{0,60}"
    r"\b(?:registry|npm|pypi|crates\.io|origin|remote|server|production|prod|github|gitlab|internet|"
    r"pastebin|slack|channel|account|everyone|public)\b",
    re.IGNORECASE,
)
_SECRET_FILES = re.compile(
    r"(?:~|\$HOME|/home/\w+|/root)/\.(?:ssh|aws|gnupg|config/gh|netrc|npmrc|pypirc|docker)\b|\bid_(?:rsa|ed25519|ecdsa)\b",
    re.IGNORECASE,
)
_SECRETS = re.compile(
    _IMPERATIVE + r"(?:print|paste|show|send|list|find|collect|dump|reveal|tell|copy|look\s+(?:through|for)|"
    r"search|grab|read)\b[^.?!\n]{0,60}\b(?:api\s+keys?|passwords?|credentials|secrets?|private\s+keys?|"
    r"ssh\s+keys?|tokens?)\b",
    re.IGNORECASE,
)
_DESTROY = re.compile(
    _IMPERATIVE + r"(?:delete|remove|wipe|erase|rm\s+-rf|drop)\b[^.?!\n]{0,40}"
    r"\b(?:all\s+(?:the\s+)?files|every\s+file|the\s+(?:whole\s+)?(?:repo(?:sitory)?|project|codebase|"
    r"git\s+history|\.git)|(?:the\s+|all\s+(?:the\s+)?)?(?:tests|test\s+(?:folder|directory|dir|suite|files|script))"
    r"|test/|tests/)(?!\w)|"
    + _IMPERATIVE
    + r"(?:disable|skip|comment\s+out)\s+(?:all\s+(?:the\s+)?tests|the\s+(?:whole\s+)?test\s+suite)\b|"
    + _IMPERATIVE
    + r"(?:force[- ]push|rewrite\s+(?:the\s+)?git\s+history)\b|\bmake\s+(?:the\s+)?tests\s+pass\s+by\s+"
    r"(?:deleting|removing|skipping|disabling)\b",
    re.IGNORECASE,
)


def ask_kind(prompt: str) -> AskKind:
    """Which answer the question asks for (see the module docstring); ``general`` for the rest."""
    if _RUN_TESTS.search(prompt):
        return "tests"
    if _HISTORY.search(prompt):
        return "history"
    if _COVERS.search(prompt):
        return "covers"
    if _CALLERS.search(prompt):
        return "callers"
    if _MEMBERS.search(prompt):
        return "members"
    if _LIST.search(prompt):
        return "list"
    return "general"


def refusal(prompt: str) -> str | None:
    """Why nestor will not carry out ``prompt``, as the answer to give; None when it may.

    Each sentence is judged on its own, and only a request (a sentence that opens with what to
    do) is refused: "How does the client send the token to the server?" is a question.
    """
    sentences = re.split(r"(?<=[.!?;])\s+|\n+", prompt.strip())
    if _SECRET_FILES.search(prompt) or any(_SECRETS.search(sentence) for sentence in sentences):
        return (
            "I won't do that: it asks me to read or reveal credentials or private keys, which are outside "
            "this project and must not be copied into a conversation. Nothing was read or changed."
        )
    if any(_OUTSIDE.search(sentence) for sentence in sentences):
        return (
            "I won't do that: it acts outside this project (publishing, pushing or sending somewhere), with "
            "your accounts, which I do not do on my own. Nothing was changed; run that step yourself when "
            "you are ready."
        )
    if any(_DESTROY.search(sentence) for sentence in sentences):
        return (
            "I won't do that: it would delete or disable the project's work or its tests, which cannot be "
            "judged safe from here. Nothing was changed. If the tests are slow or in the way, run a part "
            "of them, or tell me which test is wrong and why."
        )
    return None
