"""The shopping world: catalog, search index, tools, tasks, rotation and the tool server."""
