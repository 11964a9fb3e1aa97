"""The local network demo (``arena demo``): a local chain, neurons as processes, rounds, weights, export.

Modules: :mod:`neurons.demo.agents` (the demo's extra miner agents), :mod:`neurons.demo.network`
(work dir, chain, wallets, catalog, index, and the neuron processes), :mod:`neurons.demo.config`
(what the demo runs and produced), :mod:`neurons.demo.run`
(the run from set-up to stop), :mod:`neurons.demo.summary` (the per-miner table and JSON).
See ``docs/demo.md``.
"""
