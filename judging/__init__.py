"""Judging: checks that turn a task, a trajectory and its tool log into a Judgment."""
