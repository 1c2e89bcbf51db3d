import sys

from tritongate.cli import main

sys.exit(main())
