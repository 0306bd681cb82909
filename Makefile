# The commands of the README: `make run`, `make test`, `make bench`. Each installs the packages
# of its set that are missing (scripts/install-deps.sh), configures build/ and builds what it
# needs, then runs. One build tree for all: `make run` builds only `dlsched` (no GoogleTest or
# Google Benchmark needed); `make test` and `make bench` turn their parts on in the same tree.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: all build run test bench bench-build clean format

all: build

# $(call configure,SET,OPTIONS): installs SET's packages, then runs CMake when the tree is not
# configured yet or its cache lacks one of OPTIONS (NAME:TYPE=VALUE). Otherwise the build
# re-runs CMake by itself when a CMakeLists.txt changes.
define configure
	@scripts/install-deps.sh $(1)
	@if [ ! -f $(BUILD_DIR)/build.ninja ] $(foreach o,CMAKE_BUILD_TYPE:STRING=$(BUILD_TYPE) $(2),|| ! grep -qx '$(o)' $(BUILD_DIR)/CMakeCache.txt); then \
	  set -x; cmake -S . -B $(BUILD_DIR) -G Ninja $(addprefix -D,CMAKE_BUILD_TYPE:STRING=$(BUILD_TYPE) $(2)); \
	fi
endef

# Whatever the tree is configured for (the binary, plus tests and benchmarks where turned on).
build:
	$(call configure,run,)
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job on built-in defaults: the built-in synthetic workload under the main policies,
# then a short demonstration of the daemon.
run:
	$(call configure,run,)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target dlsched
	$(BUILD_DIR)/dlsched simulate --report $(BUILD_DIR)/report.html --json $(BUILD_DIR)/results.json
	scripts/demo-daemon.sh $(BUILD_DIR)/dlsched

test:
	$(call configure,test,DLSCHED_BUILD_TESTS:BOOL=ON)
	cmake --build $(BUILD_DIR) -j $(JOBS)
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

bench-build:
	$(call configure,bench,DLSCHED_BUILD_BENCH:BOOL=ON)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target dlsched_bench

bench: bench-build
	bench/run.sh

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD_DIR)
