import logging
import os
import sys

from localcube.cli import main

code = main()
# Everything localcube started is stopped by now (serve's exit stack): what is left is the
# interpreter's teardown of its imports, about 0.15 s of every stop, which nothing needs.
logging.shutdown()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
