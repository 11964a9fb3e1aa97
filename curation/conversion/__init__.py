"""Curation's conversion stage: axis-B traces rebuilt as grounded agentic trajectories, then re-judged."""
