# unwound — top-level driver. `make check` and `make demo` install what they need.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps configure check check-asan demo bench fuzz clean

all: configure
	cmake --build $(BUILD) -j$(JOBS)

deps:
	./scripts/install-deps

configure: deps
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

# The test command: install, build with -Werror, run every test (unit, e2e with perf).
check: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUW_WERROR=ON -DUW_TESTS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer (leak checking included).
check-asan: deps
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DUW_WERROR=ON -DUW_TESTS=ON -DUW_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j$(JOBS)
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j$(JOBS)

# Profile the bundled demo program with perf, then show what unwound makes of it.
demo: all
	./examples/run-demo $(BUILD)

bench: all
	./bench/run $(BUILD)

bench-record: all
	./bench/record $(BUILD)

# a 5-minute system-wide recording under load; the recorder's RSS must stay flat (needs root)
soak: all
	./tests/soak/soak.sh $(BUILD)

# Each fuzz target for FUZZ_SECONDS (default 60) with clang's libFuzzer, ASan and UBSan.
fuzz: deps
	./fuzz/run $(BUILD)-fuzz

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz
