"""``python -m aim_dev.clusterdns``: the cluster DNS stand-in against a kubeconfig."""

import sys

from aim_dev.clusterdns.server import main

sys.exit(main())
