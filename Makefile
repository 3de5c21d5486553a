# The first two targets are the whole set-up on a fresh machine.
.PHONY: run test bench clean

run:  ## install what is missing, start the stack with the demo mailbox
	@bash scripts/bootstrap.sh
	@.venv/bin/pmsearch up

test:  ## install what is missing, run every test (tests start their own servers)
	@bash scripts/bootstrap.sh
	@.venv/bin/python -m pytest -q -p no:cacheprovider

bench:  ## every benchmark; each prints a table and a JSON line
	@bash scripts/bootstrap.sh
	@.venv/bin/python -m bench

clean:
	rm -rf var .venv
