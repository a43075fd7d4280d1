"""The version of sentcl, in the bottom floor so that any module can name it (an index, a shard manifest)."""

__version__ = "0.1.0"
