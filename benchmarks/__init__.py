"""symgraph's benchmark suite against its peers: ``python -m benchmarks.run`` (see run.py)."""
