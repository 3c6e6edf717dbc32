"""The course's example queries, in the running model's language.

The source article studies the search query 王者荣耀怎么玩 ("how to play
Honor of Kings") on ``bert-base-chinese``. With an English model the course
uses an English query of the same shape: a question about how to play a game.
"""

from __future__ import annotations

EXAMPLE_ZH = "王者荣耀怎么玩"
EXAMPLE_EN = "how do you play chess"

#: Word segmentation of the examples (the units the perturbation lessons move).
EXAMPLE_WORDS = {
    EXAMPLE_ZH: ["王者", "荣耀", "怎么", "玩"],
    EXAMPLE_EN: ["how", "do", "you", "play", "chess"],
}


def example_query(language: str = "zh") -> str:
    """The article's query for ``"zh"``, its English analogue otherwise."""
    return EXAMPLE_ZH if language == "zh" else EXAMPLE_EN


def example_for(m) -> str:
    """The example query in the language of a :class:`~attnlab.core.models.LoadedModel`."""
    return example_query(m.language)
