"""Session modes and configuration options an editor shows: how much nestor asks, and each role's model.

The modes decide only the questions the permission rules leave to the user, never the rules or the
sandbox (``nestor.app.permission_modes``, which the SDK's ``permission_mode`` shares): ``ask``
sends every question to the editor; ``accept_edits`` answers "allow once" to a question about
changing a file inside the project; ``yolo`` to every question, as ``--yolo`` does. A deny rule
still refuses, an ask rule still asks, in every mode, and so does a write into a git dir (which
``--yolo`` asks about too); ``bash`` still runs in the sandbox.
"""

from __future__ import annotations

from acp.schema import (
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from nestor.app.permission_modes import ModeId as ModeId
from nestor.app.permission_modes import answers_itself as answers_itself

MODES: dict[ModeId, SessionMode] = {
    "ask": SessionMode(
        id="ask", name="Ask", description="Ask before changing files, running commands or using the network."
    ),
    "accept_edits": SessionMode(
        id="accept_edits",
        name="Accept edits",
        description="Change files inside the project without asking; ask for the rest.",
    ),
    "yolo": SessionMode(
        id="yolo",
        name="Yolo",
        description="Ask nothing the rules leave open; deny and ask rules and the sandbox still hold.",
    ),
}

MODE_OPTION = "mode"
MODEL_OPTIONS = {"large_model": "large", "small_model": "small"}
"""Config option id -> model role."""


def mode_state(current: ModeId) -> SessionModeState:
    """The modes and the current one, as ``session/new`` answers them."""
    return SessionModeState(current_mode_id=current, available_modes=list(MODES.values()))


def is_mode(value: str) -> bool:
    """True when ``value`` names one of the modes."""
    return value in MODES


def config_options(
    mode: ModeId, models: dict[str, str | None], choices: list[str]
) -> list[SessionConfigOptionSelect]:
    """The session's options: its mode, and the model of each role among ``choices``.

    Args:
        mode: The current mode.
        models: Each role's current model (None where no model is configured).
        choices: The models an editor may pick from (each role's, and the embedded one).

    """
    options = [
        SessionConfigOptionSelect(
            type="select",
            id=MODE_OPTION,
            name="Mode",
            category="mode",
            current_value=mode,
            options=[
                SessionConfigSelectOption(value=item.id, name=item.name, description=item.description)
                for item in MODES.values()
            ],
        )
    ]
    for option_id, role in MODEL_OPTIONS.items():
        current = models.get(role)
        if current is None:
            continue
        values = list(dict.fromkeys([current, *choices]))
        options.append(
            SessionConfigOptionSelect(
                type="select",
                id=option_id,
                name=f"{role.capitalize()} model",
                description="the main agent's model" if role == "large" else "titles and research",
                category="model",
                current_value=current,
                options=[SessionConfigSelectOption(value=value, name=value) for value in values],
            )
        )
    return options
