"""Persistence of tasks, episodes, tool logs, judgments, rounds and weights (SQLAlchemy, Alembic)."""
