"""Objective perturbation: the release, its adaptive form and its law."""
