"""Persistence of tasks, episodes, tool logs, judgments and weights; curation and export."""
