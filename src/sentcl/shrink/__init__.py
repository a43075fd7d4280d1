"""``sentcl shrink``: from a teacher to a smaller, faster model that meets a speed budget or a quality target.

``plan`` (targets, candidates, estimates), ``layer_choice``, ``steps`` (resumable step records), ``build``
(each candidate), ``evaluation`` (the user's evaluation data), ``outputs`` (scores, speeds, the Pareto table,
plot and chosen model), ``run`` (the whole command). The command: ``sentcl.cli.shrink``.
"""
