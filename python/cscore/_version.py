"""The version of cscore (one place; ``cscore.__version__`` reads it)."""

__version__ = "0.1.0"
