# Two commands set up a fresh machine: `make test` and `make train`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install test test-slow test-all test-torch lint train bench bench-torch clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,plot,bench,vision,distributed,interop]'
	@# the [jit] extra where numba has a wheel for this platform and this NumPy (pinned: the
	@# extra must not move it); without it every op runs its NumPy code
	$(PY) -m pip freeze | grep -i '^numpy==' > $(VENV)/numpy-pin.txt || true
	$(PY) -m pip install --quiet --only-binary numba,llvmlite -c $(VENV)/numpy-pin.txt -e '.[jit]' \
	  && echo "make: numba installed: tensorgrad's fused kernels are on (TENSORGRAD_JIT=0: off)" \
	  || echo "make: numba is not installable here (no wheel for this platform or NumPy): every op runs NumPy"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -n 2 -m "not slow" -q

test-slow: $(STAMP)
	$(PY) -m pytest -m slow -q

test-all: $(STAMP)
	$(PY) -m pytest -n 2 -q

# The PyTorch comparisons only (tests/torch_marker.py marks them), with PyTorch's CPU build.
test-torch: $(STAMP)
	$(PY) -m pip install --quiet 'torch==2.13.0'
	$(PY) -m pytest -n 2 -m "torch and not slow" -q

lint: $(STAMP)
	$(PY) -m ruff check tensorgrad tests examples bench
	$(PY) -m ruff format --check tensorgrad tests examples bench

train: $(STAMP)
	mkdir -p runs
	$(PY) -m tensorgrad train --dataset auto --save runs/model.pt --plot runs/training.png

bench: $(STAMP)
	$(PY) -m bench

bench-torch: $(STAMP)
	$(PY) -m pip install --quiet 'torch==2.13.0'
	$(PY) -m bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
