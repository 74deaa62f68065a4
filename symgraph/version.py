"""symgraph's version: in generated modules' headers, cache keys and ``symgraph --version``."""

__version__ = "0.1.0"
