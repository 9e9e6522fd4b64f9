# unwound — top-level driver. `make` only builds (the library and the CLI: no test, so none of
# the test-only packages is needed); `make check` and `make demo` install what they need first
# (scripts/install-deps).
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

.PHONY: all configure configure-tests install check check-asan check-tsan abi-update demo bench bench-record bench-prof soak fuzz clean

all: configure
	cmake --build $(BUILD) -j$(JOBS)

configure:
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

# Installs the library, its header, pkg-config file, CMake package, man pages and the CLI under
# PREFIX (default /usr/local), below DESTDIR when set (staged installs).
install: configure
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(BUILD) -j$(JOBS)
	cmake --install $(BUILD)

# The build with the tests and their programs (after `install-deps check`: cmocka and the rest).
configure-tests:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUW_TESTS=ON $(CMAKE_FLAGS)

# The test command: install, build with -Werror, run every test (unit, e2e with perf; two
# perf-based tests at a time, those recording system-wide alone: tests/resources.json).
check:
	./scripts/install-deps check
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUW_WERROR=ON -DUW_TESTS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --resource-spec-file $(CURDIR)/tests/resources.json

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer (leak checking included).
check-asan:
	./scripts/install-deps check
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DUW_WERROR=ON -DUW_TESTS=ON -DUW_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j$(JOBS)
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j$(JOBS) --resource-spec-file $(CURDIR)/tests/resources.json

# The ABI baselines (abi/libunwound.abi.xz, abi/libunwound-prof.abi.xz), after an intentional
# change: tests/api/abi.sh.
abi-update: all
	tests/api/abi.sh $(BUILD)/libunwound.so.0 --update
	tests/api/abi.sh $(BUILD)/libunwound-prof.so.0 --update

# Threads sharing one session, under ThreadSanitizer (the library and the test built with it).
check-tsan:
	./scripts/install-deps check
	cmake -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUW_WERROR=ON -DUW_TESTS=ON -DUW_TSAN=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)-tsan -j$(JOBS) --target threads hammer sharedtracker unwound_cli e2e_nofp tw_nofp e2e_fp tw_fp \
		unwound_prof profwork_nofp profwork_fp profhot_a profhot_b
	cd $(BUILD)-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure -L threads

# Profile the bundled demo program with perf, then show what unwound makes of it.
demo:
	./scripts/install-deps demo
	$(MAKE) all
	./examples/run-demo $(BUILD)

bench:
	./scripts/install-deps check
	$(MAKE) all
	./bench/run $(BUILD)

# (bench-record and soak run the tests' programs)
bench-record:
	./scripts/install-deps check
	$(MAKE) configure-tests
	cmake --build $(BUILD) -j$(JOBS)
	./bench/record $(BUILD)

# libunwound-prof against gperftools' CPU profiler and perf record --call-graph dwarf (root)
bench-prof:
	./scripts/install-deps bench
	$(MAKE) all
	./bench/prof $(BUILD)

# a 5-minute system-wide recording under load; the recorder's RSS must stay flat (needs root)
soak:
	./scripts/install-deps check
	$(MAKE) configure-tests
	cmake --build $(BUILD) -j$(JOBS)
	./tests/soak/soak.sh $(BUILD)

# Each fuzz target for FUZZ_SECONDS (default 60) with clang's libFuzzer, ASan and UBSan.
fuzz:
	./scripts/install-deps check
	./fuzz/run $(BUILD)-fuzz

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz
