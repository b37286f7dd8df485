"""The Othello world: engine, WTHOR reader, DFA, state sampler and domain."""
