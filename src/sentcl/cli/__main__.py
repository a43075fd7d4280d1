"""``python -m sentcl.cli`` (what torchrun runs)."""

from sentcl.cli import main

raise SystemExit(main())
