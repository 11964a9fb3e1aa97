"""Run the `arena` command line as ``python -m neurons.cli`` (how the demo starts its neurons)."""

from neurons.cli import main

if __name__ == "__main__":
    main()
