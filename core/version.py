"""tt's version, in one place below every other module: the package (`core.__version__`), checkpoints'
metadata, the download user agent and pyproject.toml (`[tool.setuptools.dynamic]`) all read it here."""

__version__ = "0.1.0"
