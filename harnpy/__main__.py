import sys

from harnpy.cli import main

sys.exit(main())
