"""`python -m localcube.picod`."""

import sys

from localcube.picod.server import main

if __name__ == "__main__":
    sys.exit(main())
