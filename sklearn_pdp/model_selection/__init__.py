"""Differentially private model selection."""

from ._search import PrivateGridSearchCV

__all__ = ["PrivateGridSearchCV"]
