"""Layer 2: agent specs (frozen data), the registry, and readers for agent files."""
