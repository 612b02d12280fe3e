"""``python -m aimctl``: the same as the ``aimctl`` command."""

from aimctl.main import main

raise SystemExit(main())
