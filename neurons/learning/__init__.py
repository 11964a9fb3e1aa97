"""Learning from the export: render SFT rows for the local model, fine-tune it, serve the tuned weights."""
