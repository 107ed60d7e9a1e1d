"""The exception tree of nestor.

Every error a user can cause carries a one-line cause and a hint saying what to do; the CLI
prints ``error: <cause>`` and ``hint: <hint>`` and never a traceback (unless ``--debug``)::

    NestorError                      base: message + hint
    ├── UsageError                   the command line itself is malformed (exit code 2)
    ├── ConfigError                  a config file or flag is invalid (file, key)
    │   └── AgentFileError           an agent definition file is invalid (file, line, key)
    ├── UnknownAgentError            a task names an agent type nobody defined
    ├── DelegationError              a sub-agent cannot be started or resumed (running, other project)
    ├── ProviderError                a model cannot be built or reached
    │   ├── UnknownProviderError     "foo:bar" names no known or configured provider
    │   ├── MissingCredentialsError  the provider's API key is not set
    │   └── ModelRequestError        the provider failed after retries (429, 5xx, network)
    ├── StoreError                   the session database cannot be used
    │   ├── SessionNotFoundError     no session with that id (or prefix)
    │   └── SessionInUseError        another nestor process is running the session
    ├── CheckpointError              a snapshot cannot be taken, or a restore cannot be done in full
    └── ToolError                    a tool refuses its input; becomes an error tool result
        └── PermissionDeniedError    a rule or the user denied a tool call
"""

from __future__ import annotations


class NestorError(Exception):
    """Base of every error nestor reports to a user: a one-line cause plus what to do."""

    exit_code: int = 1
    """The exit code of the ``nestor`` command that ends with this error."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(NestorError):
    """The command line names no such command or flag, lacks an argument, or a value does not parse."""

    exit_code = 2  # as argparse and Click exit on usage errors


class ConfigError(NestorError):
    """A configuration file, environment variable or flag is invalid."""


class AgentFileError(ConfigError):
    """An agent definition file is invalid; the message names the file, the line and the key."""

    def __init__(
        self, message: str, *, hint: str | None = None, path: str = "", line: int = 0, key: str = ""
    ) -> None:
        super().__init__(message, hint=hint)
        self.path = path
        self.line = line
        self.key = key


class UnknownAgentError(NestorError):
    """A task or command names an agent type that no agent file or built-in defines."""


class DelegationError(NestorError):
    """A sub-agent cannot be started, resumed or reached (it is running, or belongs elsewhere)."""


class ProviderError(NestorError):
    """A model cannot be built from the configuration or reached."""


class UnknownProviderError(ProviderError):
    """A ``provider:model`` string names a provider nestor does not know."""


class MissingCredentialsError(ProviderError):
    """The provider needs an API key that is not set."""


class ModelRequestError(ProviderError):
    """A model request failed, after retries where retrying made sense."""

    def __init__(self, message: str, *, hint: str | None = None, retryable: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.retryable = retryable


class StoreError(NestorError):
    """The session database cannot be opened, read or written."""


class SessionNotFoundError(StoreError):
    """No stored session matches the given id."""


class SessionInUseError(StoreError):
    """Another live nestor process holds the session: two runs of one session would interleave."""


class CheckpointError(NestorError):
    """A snapshot of the project cannot be taken, or an undo cannot be done in full (nothing changed)."""


class ToolError(NestorError):
    """A tool refuses its input or cannot do its job; the model sees the message as an error result."""


class PermissionDeniedError(ToolError):
    """A permission rule or the user denied a tool call."""
