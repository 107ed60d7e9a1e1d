"""What UIs show about models (``nestor models``): each role's model and its provider's credentials."""

from __future__ import annotations

from nestor.providers.catalogue import credential_status, parse_model_string
from nestor.providers.defaults import model_for_role

__all__ = ["credential_status", "model_for_role", "parse_model_string"]
