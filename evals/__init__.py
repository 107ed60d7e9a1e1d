"""nestor's eval suite: real repository tasks, run on a real model by nestor and by peer harnesses.

``python -m evals`` (``make eval``) runs every task of ``evals/tasks/*.toml`` in a fresh copy of its
repository under ``evals/repos/``, once per harness, checks each outcome automatically, prints one
row per task and harness, and writes the whole run as JSON.
"""
