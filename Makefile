# robo_rl: `make demo` trains the main job end to end; `make test` runs the test suite.
# Both create .venv on a fresh machine. torch is installed first, pinned, so pip reuses the local CPU wheel
# instead of pulling the CUDA build.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: demo test bench install lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

$(STAMP): $(PY) pyproject.toml setup.py
	$(PIP) install $(TORCH)
	$(PIP) install -e ".[train,sim,export,dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/robo-rl demo

# pytest exits 5 when it collects nothing: that is a failure here, never a silent pass.
test: $(STAMP)
	$(VENV)/bin/pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "make test: no tests were collected" >&2; exit 1; fi; exit $$rc

bench: $(STAMP)
	$(PY) bench/pendulum_steps.py
	$(PY) bench/pendulum_vs_sb3.py
	$(PY) bench/algos_vs_sb3.py
	$(PY) bench/quadrotor_steps.py
	$(PY) bench/hover_gate.py

lint: $(STAMP)
	$(VENV)/bin/ruff check robo_rl sim real firmware_export tests bench

clean:
	rm -rf $(VENV) runs build *.egg-info
