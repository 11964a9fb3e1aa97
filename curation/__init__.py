"""Curation: judged traces from storage into training data (the funnel, conversion, rows, formats, export)."""
