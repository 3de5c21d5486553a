"""``pmsearch eval``: answer quality on a labelled question set.

``questions`` loads and checks the set, ``runner`` asks the gateway over HTTP/SSE,
``scoring`` turns runs into figures (pure functions), ``report`` writes them out and
``command`` wires the four together for the CLI.
"""
