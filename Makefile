# Front door. `make test` and `make train` work on a fresh Debian 12 machine
# (as root): they install what is missing, configure, build and run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all deps build test train bench clean test-asan test-asan-dnnl fuzz fuzz-short fuzz-func install

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# Warnings are errors here (LT_WERROR), as in CI; a plain cmake build and a
# first `make train` leave them warnings, so a newer compiler's new warning
# does not stop a user's build.
test: deps $(BUILD)/Makefile
	@grep -qx 'LT_WERROR:BOOL=ON' $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -DLT_WERROR=ON
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The library (with its soname), header, lazytensor.pc, CMake package, the
# lazytensor program and the Python package into /usr/local (PREFIX=... to
# change; DESTDIR is honoured).
install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

# Quiet unless the build fails: its output goes to a log, shown on failure.
train: deps $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS) > $(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; exit 1; }
	@$(BUILD)/lazytensor train $(ARGS)

# Every benchmark of docs/benchmarks.md with its PyTorch counterpart, printed
# as that page's tables (about an hour; bench/run_all.sh says how to run a
# part of it).
bench: build
	@BUILD=$(BUILD) sh bench/run_all.sh

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer; ASan's
# leak checker runs at each test's exit.
test-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLT_SANITIZE=ON -DLT_NO_DNNL=ON -DLT_WERROR=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# The sanitizers once with oneDNN: test-asan builds without it, so that
# the fallback kernels are checked, and would never run the oneDNN paths
# (blocked layouts, Winograd, the fused batch norm) under ASan and UBSan.
# Only the tests that reach oneDNN's kernels, to keep CI's time.
ASAN_DNNL_TESTS ?= test_cpu_layouts test_cpu_vs_ref test_nn_ops test_dist_train
test-asan-dnnl: deps
	cmake -S . -B build-asan-dnnl -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLT_SANITIZE=ON -DLT_PYTHON=OFF -DLT_WERROR=ON
	cmake --build build-asan-dnnl -j $(JOBS) --target $(ASAN_DNNL_TESTS)
	cd build-asan-dnnl && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure \
	  -j $(JOBS) -R '^($(subst $(eval) ,|,$(strip $(ASAN_DNNL_TESTS))))(_np[0-9]+)?$$'

# libFuzzer targets (clang): fuzz/fuzz_*.c, linked against the library built
# once with the same sanitizers.
FUZZ_SRCS := $(shell find src -name '*.c')
FUZZ_OBJS := $(patsubst src/%.c,build-fuzz/obj/%.o,$(FUZZ_SRCS))
FUZZ_TARGETS := $(patsubst fuzz/%.c,build-fuzz/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_CFLAGS := -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -fsanitize=address,undefined -Iinclude -Isrc -DLT_HAVE_ZLIB=1 -DLT_HAVE_JPEG=1 -DLT_HAVE_SPNG=1
FUZZ_SECONDS ?= 600
build-fuzz/obj/%.o: src/%.c $(shell find src -name '*.h' -o -name '*.def') include/lazytensor.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
build-fuzz/liblt.a: $(FUZZ_OBJS)
	ar rcs $@ $^
build-fuzz/%: fuzz/%.c build-fuzz/liblt.a
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $< build-fuzz/liblt.a -lm -lz -ljpeg -lspng -lpthread -o $@

fuzz-deps:
	@scripts/install-deps.sh fuzz

# Long run: FUZZ_SECONDS per target (default 10 minutes).
fuzz: fuzz-deps
	@$(MAKE) -j $(JOBS) $(FUZZ_TARGETS)
	@for t in $(FUZZ_TARGETS); do echo "== $$t"; mkdir -p $$t.corpus; \
	  $$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 $$t.corpus fuzz/corpus/$$(basename $$t) || exit 1; done

# Short fixed-seed run of each target (CI).
fuzz-short: fuzz-deps
	@$(MAKE) -j $(JOBS) $(FUZZ_TARGETS)
	@for t in $(FUZZ_TARGETS); do echo "== $$t"; \
	  $$t -seed=1 -runs=20000 -max_total_time=20 -timeout=10 -rss_limit_mb=4096 fuzz/corpus/$$(basename $$t) || exit 1; done

# Functionalization differential fuzzer against the strided eager oracle:
# a million random programs per dtype (CI runs a few thousand in ctest).
# A failure prints its seed; replay with LT_FUZZ_SEED=<seed> LT_FUZZ_PROGRAMS=1.
FUZZ_FUNC_PROGRAMS ?= 1000000
fuzz-func: build
	LT_FUZZ_PROGRAMS=$(FUZZ_FUNC_PROGRAMS) $(BUILD)/test_func_fuzz

clean:
	rm -rf $(BUILD) build-asan build-fuzz
