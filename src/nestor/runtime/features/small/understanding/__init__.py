"""Understanding a request: what it asks for, what to search for, and which files it allows to change."""
