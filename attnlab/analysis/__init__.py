"""Measurements on attention maps (head statistics, perturbation, position,
fixedness, diversity, regrouping, importance, pruning) and their statistics.
Imports only :mod:`attnlab.core` and :mod:`attnlab.data`."""
