"""The source article's claims, one module per topic, each a function that
returns a :class:`attnlab.course.verdicts.ClaimVerdict` computed from a study.

The thresholds that decide each claim are named constants at the top of its
module, with the article's own numbers (``ARTICLE_*``) beside them.
"""
