# The entry points, for those who reach for make; each is a script.
.PHONY: test demo bench lint

test:
	scripts/test

demo:
	scripts/demo

# Reproduces every table of BENCHMARKS.md (KERNEL=sid, ROUNDS=5).
bench:
	ROUNDS=$(or $(ROUNDS),5) scripts/bench $(or $(KERNEL),sid)

lint:
	scripts/lint
