"""``python -m tritongate.batch batch ...`` / ``batch-merge ...``: the batch commands alone."""

import sys

from tritongate.batch.commands import main

sys.exit(main())
