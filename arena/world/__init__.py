"""Worlds: a deterministic delta over the base catalog, compiled from a seed, applied as an index overlay.

See docs/world.md. Entry points: ``arena.world.compile.compile_world``, ``arena.world.pack``
(``save_pack``, ``load_pack``) and ``arena.world.overlay.WorldOverlay``.
"""
