"""pydelta's version, in a module of its own at the bottom of the package: the log core and the
Spark layer both record it (engineInfo) without importing the package root."""

__version__ = "0.1.0"
