"""The miner: process, app (signed `/v1/tasks`), tool client, settings and the reference agents."""
