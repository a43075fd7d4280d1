"""Files and paths, torch-free, the bottom floor: what every command that reads or writes goes through.

- :mod:`~sentcl.files.read`: the one reader of text, JSON and YAML files (file:line on every error).
- :mod:`~sentcl.files.atomic`: writes that land whole or not at all (temporary sibling, fsync, rename).
- :mod:`~sentcl.files.paths`: where things are (the data folder, the runs folder).
- :mod:`~sentcl.files.pathcheck`: what a path is before anything opens it.
"""
