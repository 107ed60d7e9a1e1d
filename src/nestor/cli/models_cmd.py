"""``nestor models``: which model each role uses and whether its provider has credentials."""

from __future__ import annotations

import json
import os
from typing import Any, Literal

from nestor.cli.options import CommonOptions

MODEL_ROLES: tuple[Literal["large"], Literal["small"]] = ("large", "small")


def show_models(options: CommonOptions | None, *, as_json: bool) -> None:
    """Print the roles, their models, and the credential status of their providers."""
    from nestor.app.models_info import credential_status, model_for_role, parse_model_string
    from nestor.core.errors import NestorError

    settings = (options or CommonOptions()).load_settings()
    rows: list[dict[str, Any]] = []
    for role in MODEL_ROLES:
        row: dict[str, Any] = {"role": role, "model": None, "provider": None, "has_credentials": False}
        try:
            model_config, embedded = model_for_role(settings, role, os.environ)
            provider, _name = parse_model_string(model_config.model)
            status = credential_status(provider, settings, os.environ)
            detail = status.detail + ("; the default without a model or key" if embedded else "")
            row |= {
                "model": model_config.model,
                "provider": provider,
                "has_credentials": status.has_credentials,
                "detail": detail,
            }
        except NestorError as exc:
            row["detail"] = exc.message + (f" ({exc.hint})" if exc.hint else "")
        rows.append(row)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'role':<6} {'model':<40} credentials")
    for row in rows:
        state = "ok" if row["has_credentials"] else "missing"
        detail = row.get("detail", "")
        print(f"{row['role']:<6} {row['model'] or '(not configured)':<40} {state}: {detail}".rstrip(": "))
