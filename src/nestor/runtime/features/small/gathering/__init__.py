"""Gathering evidence: the project's files, names, code and tests, read and searched without a model."""
