"""Round audits: a validator publishes each revealed world round; anyone recompiles and re-judges it."""
