"""Chess: moves as tokens, positions as states (python-chess as the rules engine)."""
