"""Verifying a change: the files as they were before it, whether they still parse, and the tests after it."""
