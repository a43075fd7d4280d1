"""Experiment grids: a grid file (:mod:`~sentcl.config.experiment_schema`, :mod:`~sentcl.experiments.grid`), its runs
(:mod:`~sentcl.experiments.runs`, :mod:`~sentcl.experiments.postprocess_points`), their committed summaries
(:mod:`~sentcl.experiments.summaries`), the page a grid makes (:mod:`~sentcl.experiments.page`) and the targets a
page checks (:mod:`~sentcl.experiments.targets`). Reports of a single run live in :mod:`sentcl.report`.
"""
