# The two commands of the README: `make run` and `make test`. Both install what is missing,
# configure into build/ and build, then run.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run test bench clean format

all: build

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job on built-in defaults: the built-in synthetic workload under the main policies.
run: build
	$(BUILD_DIR)/dlsched simulate --report $(BUILD_DIR)/report.html --json $(BUILD_DIR)/results.json
	scripts/demo-daemon.sh $(BUILD_DIR)/dlsched

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

bench: build
	bench/run.sh

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD_DIR)
