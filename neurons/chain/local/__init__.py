"""The in-process local chain: its state file, pallet rules, and the substrate the SDK client reads."""
