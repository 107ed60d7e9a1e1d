"""The defaults of the parameters a question names, read from signatures and the bodies after them."""

from __future__ import annotations

from pathlib import Path

from nestor.runtime.features.small.gathering.defaults import parameter_defaults
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.symbols import symbol_index
from nestor.runtime.features.small.understanding.intent import read_intent

CACHING = """\
from . import keys


def cached(cache, key=keys.hashkey, lock=None, info=False):
    return cache


def cachedmethod(cache, key=keys.methodkey, lock=None):
    return cache
"""

SERIALIZER = '''\
import typing as t


class Serializer(t.Generic[T]):
    @t.overload
    def __init__(self, secret_key, salt=b"overloaded"): ...

    def __init__(
        self,
        secret_key,
        salt: bytes | None = b"itsdangerous",
        *,
        signer=None,
    ):
        if signer is not None:
            signer = signer
        else:
            signer = self.default_signer
        self.signer = signer


class Mixin(Serializer[str]):
    default_signer = "mixin's"


class URLSafeSerializer(Mixin, Serializer[str]):
    """No __init__ of its own."""
'''

SIGNER = """\
class Signer:
    default_key_derivation: str = "django-concat"

    def __init__(self, secret_key, key_derivation=None):
        if key_derivation is None:
            key_derivation = self.default_key_derivation
        self.key_derivation = key_derivation
"""


def _defaults(root: Path, question: str) -> str:
    reader = ProjectReader(root)
    index = symbol_index(reader)
    return parameter_defaults(question, read_intent(question, (), index.names()), index, reader)


def _project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(CACHING)
    (root / "pkg" / "serializer.py").write_text(SERIALIZER)
    (root / "pkg" / "signer.py").write_text(SIGNER)
    (root / "tests").mkdir()
    (root / "tests" / "test_cached.py").write_text("def cached(key=None):\n    pass\n")
    return root


def test_the_default_of_the_named_parameter_of_the_named_function(tmp_path: Path) -> None:
    # Found on cachetools: asked which function builds the key when @cached gets no `key=`, the
    # model answered `methodkey`, the default of the neighbouring cachedmethod.
    root = _project(tmp_path)
    question = "When I decorate a function with @cached and don't pass `key=`, which function builds the key?"
    # Not lock or info (not asked), not the tests' own `cached`.
    assert _defaults(root, question) == "Defaults: `cached(key=keys.hashkey)` (pkg/__init__.py:4)."


def test_a_class_without_an_init_gets_its_nearest_base_class_constructor(tmp_path: Path) -> None:
    # Found on itsdangerous: asked what salt `URLSafeSerializer(secret)` signs with, the model
    # answered with the signer's key derivation; the salt is in an inherited, overloaded __init__.
    root = _project(tmp_path)
    question = "What salt does `URLSafeSerializer(secret)` use when I don't pass a salt argument?"
    assert _defaults(root, question) == (
        'Defaults: `URLSafeSerializer(salt=b"itsdangerous")` (`Serializer.__init__`) (pkg/serializer.py:8).'
    )
    # A keyword-only None replaced in an else branch by a class attribute of a base class.
    signer = _defaults(root, "Which signer does a `URLSafeSerializer` use without signer?")
    assert signer == (
        "Defaults: `URLSafeSerializer(signer=None)` (`Serializer.__init__`), then "
        """`signer = self.default_signer` and `default_signer = "mixin's"` (pkg/serializer.py:8)."""
    )


def test_a_none_default_is_followed_by_what_the_body_puts_instead(tmp_path: Path) -> None:
    root = _project(tmp_path)
    question = "If I construct a `Signer` without passing key_derivation, which scheme does it use?"
    assert _defaults(root, question) == (
        "Defaults: `Signer(key_derivation=None)`, then `key_derivation = self.default_key_derivation` "
        """and `default_key_derivation: str = "django-concat"` (pkg/signer.py:4)."""
    )


def test_nothing_when_the_question_names_no_parameter(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _defaults(root, "What does `cached` use by default?") == ""
    assert _defaults(root, "What key does `missing` use by default?") == ""
