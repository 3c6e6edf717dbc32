"""The errors a student meets when a model cannot be used; each message says what to do."""

from __future__ import annotations


class ModelLoadError(RuntimeError):
    """Raised when no model could be loaded; the message says what to do."""


class NoAttentionError(RuntimeError):
    """Raised when a model's forward pass does not return attention maps."""
