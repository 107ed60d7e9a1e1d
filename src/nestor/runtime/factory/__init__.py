"""The agent factory: every agent (the main one and sub-agents) built from an ``AgentSpec``."""
