"""The chain: types the node sees, the bittensor SDK adapter, request signing, and the local chain.

Only this package imports ``bittensor``. Its ``__init__`` imports nothing, so reading the chain
types does not load the SDK.
"""
