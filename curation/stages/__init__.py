"""The curation funnel's stages, one module each, named as ``funnel.json`` names them."""
