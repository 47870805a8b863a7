"""`python -m zgen` is the same as the `zgen` command."""

from zgen.cli import main

raise SystemExit(main())
