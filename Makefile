# kiln: `make run` and `make test` are all a new user needs.
# Each installs what is missing (Debian packages, then a project-local .venv with the
# pinned Halide wheel, CMake and Ninja), configures, builds, and runs.
# A second run installs nothing and only rebuilds what changed.

HALIDE_VERSION := 21.0.0
CMAKE_VERSION  := 3.31.6
NINJA_VERSION  := 1.11.1.4
APT_PACKAGES   := g++ make python3 python3-venv libgtest-dev

VENV      := .venv
BUILD     := build
JOBS      ?= $(shell nproc)
PYTHON    ?= python3
STAMP_APT := $(BUILD)/.apt-ok
STAMP_VENV := $(VENV)/.kiln-halide-$(HALIDE_VERSION)-cmake-$(CMAKE_VERSION)-ninja-$(NINJA_VERSION)
HALIDE_ROOT = $(shell ls -d $(CURDIR)/$(VENV)/lib/python3*/site-packages/halide 2>/dev/null | head -n 1)

.PHONY: run test build configure setup clean bench
run: build
	$(BUILD)/bin/compute_expression

test: build
	cd $(BUILD) && ../$(VENV)/bin/ctest --output-on-failure -j $(JOBS)

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

# Debian packages: installed only when one is missing.
$(STAMP_APT):
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "kiln: installing Debian packages:" $$missing; \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi
	@mkdir -p $(BUILD) && touch $@

# Halide 21 (C++ SDK and CMake package inside the official wheel), CMake and Ninja.
$(STAMP_VENV): $(STAMP_APT)
	@test -x $(VENV)/bin/pip || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check \
	    halide==$(HALIDE_VERSION) cmake==$(CMAKE_VERSION) ninja==$(NINJA_VERSION)
	@touch $@

clean:
	rm -rf $(BUILD)
