"""Worlds: a deterministic delta over the base catalog, compiled from a seed, applied as an index overlay."""
