"""``python -m tinyk.grading``: the instructors' command line (:mod:`tinyk.grading.cli`)."""

import sys

from tinyk.grading.cli import main

sys.exit(main())
