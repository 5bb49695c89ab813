import sys

from onemachine.cli import main

sys.exit(main())
