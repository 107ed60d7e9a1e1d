"""Layer 5: the command line (headless runs, the REPL, sessions and models commands)."""
