"""Composition root: command line, settings, validator and miner processes, chain, HTTP."""
