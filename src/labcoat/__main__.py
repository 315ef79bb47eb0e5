"""`python -m labcoat ...`: the `labcoat` command."""

from labcoat._cli.main import main

main()
