"""The errors a student meets when a model cannot be used; each message says what to do."""

from __future__ import annotations


class ModelLoadError(RuntimeError):
    """Raised when no model could be loaded; the message says what to do."""


class ModelRefused(ModelLoadError, ValueError):
    """Raised when a model was found but the course cannot read it (a decoder-only model, one that returns
    no attention maps, too few heads); the message is one sentence saying why
    (:func:`attnlab.core.models.refusal`)."""


class NoAttentionError(RuntimeError):
    """Raised when a model's forward pass does not return attention maps."""
