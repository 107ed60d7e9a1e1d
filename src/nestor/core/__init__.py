"""Plain data shared by every layer (events, errors, usage, ids).

The bottom layer, beside ``testing``: it imports only the standard library, pydantic and
``pydantic_ai.messages``.
"""
