"""Layer 0: plain data shared by every layer (events, errors, usage, ids)."""
