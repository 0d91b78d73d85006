"""Scoring: which functions matter for a request, and why."""
