"""pmsearch: agents ask questions of their mail and get answers whose citations code has
verified.

One distribution, one namespace: ``pmsearch.services.<stage>`` (one package per stage:
gateway, planner, searcher, answerer, verifier, sync), ``pmsearch.shared`` (contracts and
plumbing every stage uses), ``pmsearch.cli`` (the ``pmsearch`` command) and
``pmsearch.testing`` (the scripted model and test servers, for tests and benchmarks).
"""
