# kiln: `make run` and `make test` are all a new user needs.
# Each installs what is missing (Debian packages, then a project-local .venv with the
# pinned Halide wheel, CMake and Ninja), configures, builds, and runs.
# A second run installs nothing and only rebuilds what changed.

HALIDE_VERSION := 21.0.0
CMAKE_VERSION  := 3.31.6
NINJA_VERSION  := 1.11.1.4
ONNX_VERSION   := 1.23.2
APT_PACKAGES   := g++ make python3 python3-venv libgtest-dev nlohmann-json3-dev libcli11-dev \
                  libonnx-dev libprotobuf-dev libonnx-testdata

VENV      := .venv
BUILD     := build
JOBS      ?= $(shell nproc)
PYTHON    ?= python3
STAMP_APT := $(BUILD)/.apt-ok
STAMP_VENV := $(VENV)/.kiln-halide-$(HALIDE_VERSION)-cmake-$(CMAKE_VERSION)-ninja-$(NINJA_VERSION)
HALIDE_ROOT = $(shell ls -d $(CURDIR)/$(VENV)/lib/python3*/site-packages/halide 2>/dev/null | head -n 1)

.PHONY: run test build configure setup clean bench test-sanitize fuzz-parsers
run: build
	$(BUILD)/bin/compute_expression

# Without the compile cache (docs/compile_cache.md): thousands of small test graphs would
# fill ~/.cache/kiln and add a link step to each; its own tests turn it on in a folder of
# their own (tests/lower/compile_cache_test.cpp).
test: build
	cd $(BUILD) && KILN_CACHE=0 ../$(VENV)/bin/ctest --output-on-failure -j $(JOBS)

bench: build
	$(BUILD)/bin/kiln bench

build: configure
	$(VENV)/bin/cmake --build $(BUILD) -j $(JOBS)

configure: setup
	@(test -f $(BUILD)/build.ninja && test -f $(BUILD)/CMakeCache.txt) || $(VENV)/bin/cmake -S . -B $(BUILD) -G Ninja \
	    -DCMAKE_BUILD_TYPE=Release \
	    -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(VENV)/bin/ninja \
	    -DHalide_DIR=$(HALIDE_ROOT)/lib64/cmake/Halide \
	    -DHalideHelpers_DIR=$(HALIDE_ROOT)/lib64/cmake/HalideHelpers

setup: $(STAMP_APT) $(STAMP_VENV)

# Debian packages: installed only when one is missing. $(call apt_install,<packages>)
define apt_install
@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "kiln: installing Debian packages:" $$missing; \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi
endef
$(STAMP_APT):
	$(call apt_install,$(APT_PACKAGES))
	@mkdir -p $(BUILD) && touch $@

# Halide 21 (C++ SDK and CMake package inside the official wheel), CMake and Ninja.
$(STAMP_VENV): $(STAMP_APT)
	@test -x $(VENV)/bin/pip || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check \
	    halide==$(HALIDE_VERSION) cmake==$(CMAKE_VERSION) ninja==$(NINJA_VERSION)
	# ONNX's light models (tests/onnx): the data of the onnx package, not its Python.
	$(VENV)/bin/pip install -q --disable-pip-version-check --no-deps onnx==$(ONNX_VERSION)
	@touch $@

# ---- make test-sanitize: the whole build and CTest suite under ASan and UBSan -------------
# A build of its own (build-sanitize, KILN_SANITIZE=ON: cmake/KilnSanitize.cmake) with
# gcc's -fsanitize=address,undefined; the generators that run during the build are
# instrumented too, so the build runs under the same options. What is suppressed and
# why: tests/sanitize/*.supp and docs/testing.md.
SAN_BUILD := build-sanitize
SAN_SUPP  := $(CURDIR)/tests/sanitize
SAN_ENV   := ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_leaks=0:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=0:suppressions=$(SAN_SUPP)/asan.supp \
             UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:report_error_type=1:suppressions=$(SAN_SUPP)/ubsan.supp
# The install test builds an outside project against the installed (instrumented) libkiln.
SAN_OUTSIDE_ENV := CFLAGS="-fsanitize=address,undefined" CXXFLAGS="-fsanitize=address,undefined" \
             LDFLAGS="-fsanitize=address,undefined"

test-sanitize: setup
	@(test -f $(SAN_BUILD)/build.ninja && test -f $(SAN_BUILD)/CMakeCache.txt) || $(VENV)/bin/cmake -S . -B $(SAN_BUILD) -G Ninja \
	    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=ON \
	    -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(VENV)/bin/ninja \
	    -DHalide_DIR=$(HALIDE_ROOT)/lib64/cmake/Halide \
	    -DHalideHelpers_DIR=$(HALIDE_ROOT)/lib64/cmake/HalideHelpers
	$(SAN_ENV) $(VENV)/bin/cmake --build $(SAN_BUILD) -j $(JOBS)
	cd $(SAN_BUILD) && $(SAN_ENV) $(SAN_OUTSIDE_ENV) ../$(VENV)/bin/ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# ---- make fuzz-parsers: libFuzzer on every parser of kiln's input files ---------------------
# tests/fuzz_parsers as a project of its own, built with clang into build-fuzz; each target
# runs FUZZ_SECONDS from the committed seeds (tests/fuzz_parsers/corpus/<target>), keeping
# what it finds new in build-fuzz/corpus/<target> and any crashing input in
# build-fuzz/artifacts/. FUZZ_TARGETS picks some: make fuzz-parsers FUZZ_TARGETS=json FUZZ_SECONDS=600
FUZZ_BUILD        := build-fuzz
FUZZ_SECONDS      ?= 30
FUZZ_TARGETS      ?= json contraction_knobs tuning_db machine_overrides target aot_weights onnx npy
FUZZ_APT_PACKAGES := clang libclang-rt-dev
# -timeout=60: the `target` fuzz target's first "host-cuda" JIT-compiles Halide's CUDA runtime once (over 10 s on a busy machine).
FUZZ_ENV          := ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

$(FUZZ_BUILD)/.apt-ok:
	$(call apt_install,$(FUZZ_APT_PACKAGES))
	@mkdir -p $(FUZZ_BUILD) && touch $@

# onnx and npy link the main build's libkiln.a (tests/fuzz_parsers/CMakeLists.txt says why).
fuzz-parsers: build $(FUZZ_BUILD)/.apt-ok
	@(test -f $(FUZZ_BUILD)/build.ninja && test -f $(FUZZ_BUILD)/CMakeCache.txt && grep -q KILN_BUILD_DIR $(FUZZ_BUILD)/CMakeCache.txt) || $(VENV)/bin/cmake -S tests/fuzz_parsers -B $(FUZZ_BUILD) -G Ninja \
	    -DKILN_BUILD_DIR=$(CURDIR)/$(BUILD) \
	    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	    -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(VENV)/bin/ninja \
	    -DHalide_DIR=$(HALIDE_ROOT)/lib64/cmake/Halide \
	    -DHalideHelpers_DIR=$(HALIDE_ROOT)/lib64/cmake/HalideHelpers
	$(VENV)/bin/cmake --build $(FUZZ_BUILD) -j $(JOBS) --target kiln_fuzzers
	@mkdir -p $(FUZZ_BUILD)/artifacts
	@for t in $(FUZZ_TARGETS); do \
	    echo "kiln: fuzzing $$t for $(FUZZ_SECONDS) s"; \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	    $(FUZZ_ENV) $(FUZZ_BUILD)/kiln_fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=60 -rss_limit_mb=4096 -malloc_limit_mb=16384 \
	        -max_len=8192 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t- \
	        $(FUZZ_BUILD)/corpus/$$t tests/fuzz_parsers/corpus/$$t || exit 1; \
	done

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)
