"""``python -m tinyk.translations``: the Chinese edition's command line (:mod:`tinyk.translations.cli`)."""

import sys

from tinyk.translations.cli import main

sys.exit(main())
