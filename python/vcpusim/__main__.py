"""`python -m vcpusim` is the `vcpusim` command."""

from .cli import main

main()
