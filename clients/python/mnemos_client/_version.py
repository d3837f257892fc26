"""The package version, in one place for the metadata and the User-Agent header."""

__version__ = "0.1.0"
