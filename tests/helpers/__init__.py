"""Helpers shared by the tests (tests/conftest.py keeps only fixtures): import them as ``from helpers.X import ...``."""
