"""`python -m agentweb_hook AGENT`, as the `agentweb-hook` console script."""

from __future__ import annotations

import sys

from agentweb_hook import main

sys.exit(main())
