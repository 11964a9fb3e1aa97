"""The validator: process, app, rounds, weights, task pool, scheduler, start-up and its client for miners."""
