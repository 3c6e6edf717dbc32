"""The course: the source article's claims and their verdicts, saved results,
exercises and figures. The only layer that knows lesson numbers."""
