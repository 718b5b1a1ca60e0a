"""``python -m drivemetrics`` is the ``drivemetrics`` console command."""

from drivemetrics.cli import main

raise SystemExit(main())
