# The two entry points of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	rm -rf demo
	$(BIN)/sequifier make demo --demo
	cd demo && ../$(BIN)/sequifier preprocess --config-path configs/preprocess.yaml
	cd demo && ../$(BIN)/sequifier train --config-path configs/train.yaml
	cd demo && ../$(BIN)/sequifier plot logs/demo-model --floor event=$$(../$(BIN)/python -c \
		"import json; print(json.load(open('data/demo-generator.json'))['entropy_rate_nats'])")
	cd demo && ../$(BIN)/sequifier infer --config-path configs/infer.yaml
	$(BIN)/python -m sequifier.project.demo_report demo

# Every feature has a test that `make test` runs; the tests marked `slow` are further variants of them.
# TEST_WORKERS pytest processes share the tests, a file's tests in one process (TEST_WORKERS=0: one process).
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/ruff format --check --quiet .
	$(BIN)/ruff check --quiet .
	$(BIN)/python -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile

test-all: $(STAMP)
	$(BIN)/ruff format --check --quiet .
	$(BIN)/ruff check --quiet .
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

clean:
	rm -rf $(VENV) demo outputs multirun
