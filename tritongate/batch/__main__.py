"""``python -m tritongate.batch batch ...`` / ``batch-merge ...``: the batch commands alone."""

import sys

from tritongate.cli.batch import main

sys.exit(main())
