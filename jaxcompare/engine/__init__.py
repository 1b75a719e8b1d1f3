"""The measuring engine. The runner and settings run in the server/CLI process and queue
jobs; worker processes (one per precision) import JAX and measure, agree and check.
"""
