import sys

from localcube.cli import main

sys.exit(main())
