"""Where the project is: REPO, the checkout the tools run from.

Every path a tool reads or writes in the project (kunit/, src/, kconfigs/,
mutants/, out/) is made from REPO.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
