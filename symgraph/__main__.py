"""``python -m symgraph``: the same command line as the `symgraph` script."""

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
