"""Layer 3: the agent loop and everything that composes the layers below it."""
