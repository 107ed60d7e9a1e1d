"""Settings from built-in defaults, user config, project config, environment and CLI flags.

Sources, lowest to highest precedence::

    built-in defaults
    < user config      $XDG_CONFIG_HOME/nestor/config.toml (else ~/.config/nestor/config.toml)
    < project config   <project>/nestor.toml (only its narrowing keys until the folder is trusted)
    < environment      NESTOR_MODEL, NESTOR_SMALL_MODEL (NESTOR_HOME picks the data dir)
    < CLI flags        --model, --small-model, --yolo, --max-iterations, --max-tokens, --max-time

Tables merge deeply: a project ``[limits]`` table changes only the keys it names. A model role
given as a string (``large = "openai:gpt-5"``, ``NESTOR_MODEL``, ``--model``) names the model
outright and replaces the role; a role given as a table adjusts the role below it. Permission
rule lists add up across sources, so a rule from the user config is never dropped by a project.

A project's ``nestor.toml`` comes with the repository, so it is a stranger's input until the user
trusts the folder (:mod:`nestor.store.trust`): :mod:`.trust` keeps only the keys that narrow what
nestor does, and names the others in :attr:`Settings.ignored`.

Every problem becomes a one-line :class:`~nestor.core.errors.ConfigError` naming the file (or
variable, or flag) and the dotted key. This package never imports pydantic_ai: loading settings
must stay fast.

The modules, one responsibility each: :mod:`.sections` (the tables a config file may hold, one
model each), :mod:`.settings` (:class:`Settings`, the resolved result), :mod:`.loading`
(:func:`load_settings`: the sources in order, the command-line overrides), :mod:`.files` (reading
one TOML file safely), :mod:`.paths` (where the config and data live), :mod:`.trust` (what an
untrusted project may set), :mod:`.validation` (merging the sources and one-line errors). Code
inside nestor imports each name from the module that defines it; the three names below are the
package's own, for scripts that drive nestor.
"""

from nestor.config.loading import CliOverrides, load_settings
from nestor.config.settings import Settings

__all__ = ["CliOverrides", "Settings", "load_settings"]
