"""Prompt files of the reference agents (a package so that the files ship with the wheel)."""
