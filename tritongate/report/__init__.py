"""Renderers: pure functions from data to text. Only the CLI prints."""
