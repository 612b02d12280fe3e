"""``python -m aim_dev.kserve``: the KServe stand-in against a kubeconfig."""

import sys

from aim_dev.kserve.controller import main

sys.exit(main())
