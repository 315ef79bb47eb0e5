"""Keep pytest out of the fixture task folders: their grading scripts are data."""

collect_ignore_glob = ["data/*"]
