"""Screens: help (F1), sessions (resume one)."""
